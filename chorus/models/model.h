// Model: a Layer that trains (Keras's Model). Three ways to make one: subclass it and
// override call() (and optionally compute_loss, train_step, test_step, predict_step);
// the functional API, Model(inputs, outputs) over symbolic tensors from layers::Input;
// or Sequential. compile() then fit/evaluate/predict run the training loop (Trainer) on
// the calling thread. A model is used by one thread at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chorus/core/shared.h"
#include "chorus/data/dataset.h"
#include "chorus/io/safetensors.h"
#include "chorus/layers/layer.h"
#include "chorus/losses/loss.h"
#include "chorus/metrics/mean.h"
#include "chorus/metrics/metric.h"
#include "chorus/models/callback.h"
#include "chorus/models/fit_state.h"
#include "chorus/models/history.h"
#include "chorus/models/logs.h"
#include "chorus/models/worker_input.h"
#include "chorus/optimizers/optimizer.h"

namespace chorus::distribution {
class Distribution;
}

namespace chorus::models {

using autograd::Variable;

class FunctionalGraph;
class StepFunctions;

struct CompileOptions {
  Shared<optimizers::Optimizer> optimizer = "rmsprop";  // Keras's default
  // Applied to every output when y_pred has several leaves (summed). Empty: the model
  // must override compute_loss.
  Shared<losses::Loss> loss;
  std::vector<Shared<metrics::Metric>> metrics;
  // Keras's jit_compile: the default train, test and predict steps run as a traced, fused,
  // memory-planned graph per batch shape (jit::Function); the optimizer's update, the
  // metrics and Dropout's masks are nodes whose host code runs at every step. A step that
  // cannot be one static graph (an op with no compiled form, such as top_k's gradient)
  // runs eagerly with a warning; so do steps under ModelParallel and overridden
  // train_step/test_step, for now. Data-parallel replicas each run their own compiled
  // step, the gradients' reduction a node of it. Model::set_jit_compile changes it after
  // compile().
  bool jit_compile = false;
};

struct FitOptions {
  int epochs = 1;
  // Examples per batch when fit is given in-memory arrays; a Dataset's own batches
  // are used as they come.
  int64_t batch_size = 32;
  // 0: silent; 1: a progress bar (redrawn in place on a terminal, one line per epoch
  // otherwise); 2: one line per epoch.
  int verbose = 1;
  std::vector<Shared<Callback>> callbacks;
  // Holds out the last fraction of in-memory arrays (before shuffling) for validation.
  double validation_split = 0.0;
  std::optional<data::Dataset> validation_data;
  // Shuffles in-memory arrays each epoch (datasets shuffle themselves).
  bool shuffle = true;
  int initial_epoch = 0;
  // Steps per epoch; -1: until the data is exhausted. A shorter dataset ends the epoch
  // early; an infinite one requires it.
  int64_t steps_per_epoch = -1;
  int64_t validation_steps = -1;
  // Validates after epochs whose 1-based number divides by validation_freq (Keras).
  int validation_freq = 1;
};

struct EvaluateOptions {
  int64_t batch_size = 32;  // in-memory arrays only
  int verbose = 1;
  int64_t steps = -1;
  std::vector<Shared<Callback>> callbacks;
};

struct PredictOptions {
  int64_t batch_size = 32;  // in-memory arrays only
  int verbose = 0;
  int64_t steps = -1;
  std::vector<Shared<Callback>> callbacks;
};

struct JitStep;   // jit_steps.h
struct JitSteps;  // jit_steps.h

class Model : public layers::Layer {
 public:
  // For subclasses: override call().
  explicit Model(std::string name = "");
  // Functional: `inputs` and `outputs` are symbolic tensors (or Trees of them) linked by
  // layer calls. Throws ValueError if an output does not depend on the inputs through
  // layers only.
  Model(const Tree& inputs, const Tree& outputs, std::string name = "");
  ~Model() override;
  Model(Model&&) noexcept;

  // Sets the optimizer, loss and metrics; resets the metrics. May be called again.
  // Captures the current distribution (distribution::set_distribution or a strategy's
  // scope): fit, evaluate and predict then split each batch over its replicas.
  void compile(CompileOptions options);
  bool compiled() const { return optimizer_ != nullptr; }
  // Keras's Model.jit_compile, readable and settable after compile(): setting it drops the
  // compiled steps, so the next step traces again (or runs eagerly).
  bool jit_compile() const { return compile_options_.jit_compile; }
  void set_jit_compile(bool jit_compile);

  // Trains on (x, y[, sample_weight]) batches of `data` for options.epochs epochs.
  // Throws ValueError before doing anything if the model is not compiled.
  History fit(const data::Dataset& data, FitOptions options = {});
  // In-memory arrays: x and y with the same number of rows.
  History fit(const Tree& x, const Tree& y, FitOptions options = {});
  // The loss and metrics over `data` (metrics are reset first).
  Logs evaluate(const data::Dataset& data, EvaluateOptions options = {});
  Logs evaluate(const Tree& x, const Tree& y, EvaluateOptions options = {});
  // Outputs for every example, concatenated along the batch axis in input order.
  Tree predict(const data::Dataset& data, PredictOptions options = {});
  Tree predict(const Tree& x, PredictOptions options = {});

  // The forward pass. Functional models run their graph; subclasses override.
  Tree call(const Tree& inputs, bool training) override;
  // The scalar loss of a batch (mean over its examples): by default the compiled loss
  // of (y, y_pred, sample_weight). A non-scalar result is averaged.
  virtual Tensor compute_loss(const Tree& x, const Tree& y, const Tree& y_pred, const Tensor& sample_weight = {});
  // One optimizer step on a batch; returns the running metrics (Keras's train_step).
  virtual Logs train_step(const Tree& batch);
  virtual Logs test_step(const Tree& batch);
  virtual Tree predict_step(const Tree& batch);

  // Updates the loss tracker (weighted by `rows`, the batch's examples; -1: y_pred's first
  // dimension) and the compiled metrics from a batch's results.
  void update_metrics(const Tensor& loss, const Tree& y, const Tree& y_pred, const Tensor& sample_weight,
                      int64_t rows = -1);
  // The loss tracker ("loss") first, then the compiled metrics. Inside a data-parallel
  // step, the calling replica's own copies (its StepContext's, merged into the model's
  // after the step): as tf.distribute's metric variables (synchronised on read), a step
  // updates its replica's copy, so train_step and update_metrics read the same under any
  // distribution.
  std::vector<metrics::Metric*> metrics() const;
  Logs get_metrics_result() const;
  void reset_metrics();

  // REQUIRES: compiled() (throws ValueError naming the model otherwise).
  optimizers::Optimizer& optimizer() const;
  losses::Loss* loss() const { return loss_.get(); }

  // Set by callbacks (EarlyStopping, TerminateOnNaN) to end fit after the current batch.
  bool stop_training = false;

  // Keras's table: layer (type), output shape, parameter count, then the totals.
  void summary(std::ostream& out) const;
  void summary() const;

  // Weights only, one safetensors file keyed by object path (models/object_paths.h:
  // "dense_1/kernel" by the layer's place in the model, not its global name), so that
  // another instance of the same model reads it. Written atomically. Where a weight is
  // split over devices or workers, `path` is a directory of shards instead
  // (sharded_checkpoint.h), which every rank writes its part of.
  void save_weights(const std::filesystem::path& path) const;
  // `path` is a file, a saved model's directory or a directory of shards; each device
  // reads only its own blocks. Also reads files keyed by Variable::path(), as chorus
  // wrote them before object paths.
  // Throws ValueError naming the first path that differs and listing missing, unexpected
  // and mismatched (shape/dtype) variables.
  void load_weights(const std::filesystem::path& path);
  // The optimizer's iterations and slots from a safetensors file (optimizer.safetensors
  // of save(); a slot keyed by its variable's object path) or a saved model's directory
  // (its optimizer.safetensors or optimizer shards), building the optimizer first
  // if needed. REQUIRES: compiled(). Throws ValueError as load_weights does.
  void load_optimizer_state(const std::filesystem::path& path);
  // The whole model in a directory: config.json (architecture and compile settings),
  // model.weights.safetensors, optimizer.safetensors and state.json. Atomic. Where a
  // weight or slot is split over devices or workers, model-*-of-*.safetensors and
  // optimizer-*-of-*.safetensors shards with their index files instead.
  void save(const std::filesystem::path& path) const;

  nlohmann::json get_config() const override;
  std::shared_ptr<Layer> move_to_heap() && override;

  // Internal to the trainer and saving: the optimizer state to save/restore together
  // with epoch counters.
  const CompileOptions& compile_options() const { return compile_options_; }
  // The distribution captured by compile() (nullptr: one device).
  const std::shared_ptr<distribution::Distribution>& distribution() const { return distribution_; }
  // Internal to the trainer: how this compile's steps run (StepFunctions), once the
  // trainer has made them; nullptr before, after compile() and in a moved-from model's
  // new home (they refer to the model they were made for).
  StepFunctions* step_functions() const { return steps_owner_ == this ? steps_.get() : nullptr; }
  void set_step_functions(std::unique_ptr<StepFunctions> steps);
  // Builds every layer the steps use, by a forward step (with the loss when compiled and
  // `batch` has targets) on its first row, on the calling thread: what the step runtime
  // does before it copies, checks or places the weights.
  void build_on_first_row(const Tree& batch);

 protected:
  // For subclasses with their own Keras class name (Sequential).
  Model(std::string class_name, std::string name);

  // What one training or test step computed: the loss, and the targets, outputs and
  // sample weights the metrics see, for a batch of `rows` examples (-1: y_pred's first
  // dimension).
  struct StepResult {
    Tensor loss;
    Tree y, y_pred;
    Tensor sample_weight;
    int64_t rows = -1;
  };
  // The forward pass and loss of train_step (inside its tape) and test_step: call() and
  // compute_loss() by default. A subclass may compute the outputs of only the part of a
  // batch the loss reads, as long as the loss equals the whole batch's and the metrics
  // get matching y, y_pred and weights (BertMaskedLM: the masked rows with weight).
  virtual StepResult forward_step(const Tree& x, const Tree& y, const Tensor& sample_weight, bool training);
  // The batch a compiled step receives, made on the host before each call. A model whose
  // forward_step has shapes that depend on the batch's values (BertMaskedLM's weighted
  // masks) computes them here into tensors of a few fixed sizes, each a signature of its
  // own. The default returns `batch`.
  virtual Tree compiled_step_batch(const Tree& batch) const { return batch; }
  void build(const Tree& inputs) override;

 private:
  // The compiled steps of the calling replica when compile() asked for jit_compile and the
  // step runs on one device or as a data-parallel replica; nullptr otherwise.
  JitSteps* jit_steps();
  std::unique_ptr<JitSteps> make_jit_steps(const std::string& name);
  std::vector<Tensor> run_compiled(JitSteps& jit, JitStep& step, const Tree& batch);
  void apply_gradients_node(JitSteps& jit, const std::vector<Tensor>& grads);
  void update_metrics_node(JitStep& compiled, const Tensor& loss, const StepResult& step);

  // save()'s config.json (architecture and compile settings) and state.json, in `dir`.
  void write_model_description(const std::filesystem::path& dir) const;
  std::unique_ptr<FunctionalGraph> graph_;
  CompileOptions compile_options_;
  std::shared_ptr<optimizers::Optimizer> optimizer_;
  std::shared_ptr<losses::Loss> loss_;
  std::unique_ptr<metrics::Mean> loss_tracker_;
  std::vector<std::shared_ptr<metrics::Metric>> compiled_metrics_;
  std::shared_ptr<distribution::Distribution> distribution_;
  std::unique_ptr<StepFunctions> steps_;
  const Model* steps_owner_ = nullptr;  // the model steps_ was made for
  // Per replica of this worker (one on one device): each replica thread runs its own.
  std::vector<std::unique_ptr<JitSteps>> jit_;
  const Model* jit_owner_ = nullptr;  // the model jit_'s functions call
};

struct LoadModelOptions {
  // Whether to restore how the model was compiled (Keras's load_model(compile=True)):
  // its optimizer, loss and metrics from config.json's compile_config, and the optimizer's
  // iterations and slots from optimizer.safetensors. false restores the architecture and
  // weights alone and returns an uncompiled model; neither is read, so weights can still
  // be recovered from a checkpoint whose optimizer file was lost. Default true.
  bool compile = true;
};

// Rebuilds a model saved by Model::save (functional and Sequential models; a subclassed
// model cannot be rebuilt from its config — build it in code and call load_weights).
// Restores weights and, when it was compiled and options.compile is set, the compile
// settings and optimizer state. Refuses an incomplete or invalid directory rather than
// load part of it: throws IOError naming the file when state.json is missing, not JSON,
// not of format "chorus.model" or of a version this build does not read (saying which
// it found and which it reads); when config.json or a weights file is missing or
// malformed (naming the field: "config.nodes[3].layer: index 99 but there are 4
// layers"); or when state.json says the optimizer's state was saved but
// optimizer.safetensors is missing. Errors from rebuilding layers, the optimizer, the
// loss or metrics keep their class and get the file's name in front.
std::unique_ptr<Model> load_model(const std::filesystem::path& path, const LoadModelOptions& options = {});

// load_model's checks without reading the weights: state.json, config.json (every layer,
// and the optimizer, loss and metrics of its compile_config, rebuilt with the strict config
// reader) and the weights file's presence. Throws the IOError or ValueError load_model
// would, naming the invalid file; returns normally for a directory load_model accepts up
// to its weights. What `chorus checkpoint inspect` runs on a saved model.
void check_saved_model(const std::filesystem::path& path);

}  // namespace chorus::models
