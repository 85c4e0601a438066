// The training loop: Model::fit, evaluate and predict, and the default train_step,
// test_step and predict_step (Keras's Trainer).
#include <algorithm>
#include <cmath>
#include <optional>

#include "chorus/autograd/tape.h"
#include "chorus/core/error.h"
#include "chorus/core/sharding.h"
#include "chorus/distribute/distribution.h"
#include "chorus/distribute/replica_context.h"
#include "chorus/distribute/replica_runner.h"
#include "chorus/distribute/worker_group.h"
#include "chorus/layers/initializers.h"
#include "chorus/models/callback_list.h"
#include "chorus/models/distributed_steps.h"
#include "chorus/models/model.h"
#include "chorus/models/progbar_logger.h"
#include "chorus/ops/ops.h"
#include "chorus/ops/sharded_ops.h"

namespace chorus::models {
namespace {

// A model's outputs as whole tensors: under model parallelism the last layers may leave
// them sharded, and losses, metrics and predict read them whole.
Tree whole_outputs(Tree outputs) {
  if (MeshContext::current() == nullptr) return outputs;
  return outputs.map([](const Tensor& t) { return ops::sharded::replicate(t); });
}

struct Unpacked {
  Tree x, y;
  Tensor sample_weight;
};

// Keras's unpack_x_y_sample_weight: a list of 2 or 3 is (x, y[, sample_weight]);
// anything else is x alone.
Unpacked unpack(const Tree& batch) {
  if (batch.is_list() && (batch.size() == 2 || batch.size() == 3)) {
    Unpacked u{batch[0], batch[1], {}};
    if (batch.size() == 3) u.sample_weight = batch[2].tensor();
    return u;
  }
  if (batch.is_list() && batch.size() == 1) return {batch[0], {}, {}};
  return {batch, {}, {}};
}

int64_t num_rows(const Tree& tree, const char* what, const std::string& model) {
  std::vector<Tensor> leaves = tree.flatten();
  if (leaves.empty()) throw_error<ValueError>("{}: {} is empty", model, what);
  int64_t rows = -1;
  for (const Tensor& t : leaves) {
    if (t.rank() == 0) throw_error<ShapeError>("{}: {} must have a batch axis, got a scalar", model, what);
    if (rows >= 0 && t.dim(0) != rows) {
      throw_error<ValueError>("{}: the arrays in {} have different numbers of rows: {} and {}", model, what, rows, t.dim(0));
    }
    rows = t.dim(0);
  }
  return rows;
}

Tree slice_rows(const Tree& tree, int64_t begin, int64_t end) {
  return tree.map([&](const Tensor& t) { return t.first_axis_slice(begin, end); });
}

// The dataset fit/evaluate/predict iterate for in-memory arrays, reshuffled each epoch
// from `shuffle_seed` when it is given.
data::Dataset arrays_dataset(const Tree& x, const Tree& y, int64_t batch_size, std::optional<uint64_t> shuffle_seed,
                             const std::string& model) {
  if (batch_size <= 0) throw_error<ValueError>("{}: expected batch_size > 0. Received: batch_size={}", model, batch_size);
  int64_t rows = num_rows(x, "x", model);
  Tree element = x;
  if (!y.empty()) {
    int64_t y_rows = num_rows(y, "y", model);
    if (y_rows != rows) {
      throw_error<ValueError>("{}: x and y have different numbers of rows: {} and {}", model, rows, y_rows);
    }
    element = Tree::list({x, y});
  }
  data::Dataset ds = data::Dataset::from_tensor_slices(element);
  if (shuffle_seed && rows > 1) ds = ds.shuffle(rows, *shuffle_seed, /*reshuffle_each_iteration=*/true);
  return ds.batch(batch_size);
}

int64_t steps_of(const data::Dataset& data, int64_t requested) {
  if (requested > 0) return requested;
  int64_t n = data.cardinality();
  return n >= 0 ? n : -1;
}

// The default callbacks and params of a fit/evaluate/predict call.
CallbackList make_callbacks(const std::vector<Shared<Callback>>& user, Model* model, const CallbackParams& params,
                            std::shared_ptr<History> history) {
  CallbackList list(user, model, params);
  // Like Keras, a History or progress bar the user passed replaces the default one.
  auto user_has = [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    return std::any_of(user.begin(), user.end(), [](const Shared<Callback>& c) { return dynamic_cast<T*>(c.get()) != nullptr; });
  };
  if (history && !user_has(static_cast<History*>(nullptr))) list.add(std::move(history));
  if (params.verbose > 0 && !user_has(static_cast<ProgbarLogger*>(nullptr))) list.add(std::make_shared<ProgbarLogger>());
  return list;
}

void check_fit_options(const std::string& model, const data::Dataset& data, const FitOptions& options) {
  if (options.epochs < 0 || options.initial_epoch < 0) {
    throw_error<ValueError>("{}: expected epochs >= 0 and initial_epoch >= 0. Received: epochs={}, initial_epoch={}",
                            model, options.epochs, options.initial_epoch);
  }
  if (options.validation_freq <= 0) {
    throw_error<ValueError>("{}: expected validation_freq > 0. Received: validation_freq={}", model, options.validation_freq);
  }
  if (data.cardinality() == data::kInfiniteCardinality && options.steps_per_epoch <= 0) {
    throw_error<ValueError>("{}: the training data is infinite; give steps_per_epoch", model);
  }
}

}  // namespace

Tensor Model::compute_loss(const Tree& /*x*/, const Tree& y, const Tree& y_pred, const Tensor& sample_weight) {
  if (!loss_) {
    throw_error<ValueError>("{}: no loss to compute: pass one to compile() or override compute_loss()", name());
  }
  if (y.empty()) throw_error<ValueError>("{}: the data has no targets (y) for the loss {}", name(), loss_->name());
  std::vector<Tensor> targets = y.flatten(), predictions = y_pred.flatten();
  if (targets.size() != predictions.size()) {
    throw_error<ValueError>("{}: the targets {} do not match the model's outputs {}", name(), y.to_string(),
                            y_pred.to_string());
  }
  Tensor total;
  for (size_t i = 0; i < targets.size(); ++i) {
    Tensor loss = (*loss_)(targets[i], predictions[i], sample_weight);
    total = total.defined() ? ops::add(total, loss) : loss;
  }
  return total;
}

void Model::update_metrics(const Tensor& loss, const Tree& y, const Tree& y_pred, const Tensor& sample_weight,
                           int64_t rows) {
  const std::vector<metrics::Metric*> all = metrics();  // this replica's copies inside a replica
  int64_t batch = rows >= 0 ? rows : y_pred.flatten().empty() ? 0 : y_pred.flatten()[0].dim(0);
  static_cast<metrics::Mean*>(all[0])->update_state(static_cast<double>(loss.item<float>()), static_cast<double>(batch));
  if (all.size() == 1) return;
  std::vector<Tensor> targets = y.flatten(), predictions = y_pred.flatten();
  for (size_t i = 0; i < targets.size() && i < predictions.size(); ++i) {
    for (size_t k = 1; k < all.size(); ++k) all[k]->update_state(targets[i], predictions[i], sample_weight);
  }
}

static Tensor scalar_loss(const Tensor& loss) { return loss.rank() == 0 ? loss : ops::mean(loss); }

Model::StepResult Model::forward_step(const Tree& x, const Tree& y, const Tensor& sample_weight, bool training) {
  StepResult out{.y = y, .y_pred = whole_outputs((*this)(x, training)), .sample_weight = sample_weight};
  out.loss = compute_loss(x, y, out.y_pred, sample_weight);
  return out;
}

Logs Model::train_step(const Tree& batch) {
  auto [x, y, sample_weight] = unpack(batch);
  std::vector<Variable> variables;
  StepResult step;
  Tensor loss;
  std::vector<Tensor> grads;
  std::vector<autograd::IndexedSlices> sparse_grads;
  {
    autograd::GradientTape tape;
    step = forward_step(x, y, sample_weight, /*training=*/true);
    loss = scalar_loss(step.loss);
    // After the forward pass: a subclassed model's layers build on their first call.
    variables = trainable_weights();
    std::vector<Tensor> sources(variables.begin(), variables.end());
    // An embedding table's gradient stays sparse (the rows a batch read), as TensorFlow's
    // IndexedSlices do. Under data parallelism the other gradients are reduced in buckets
    // as backward produces them.
    auto* replica = distribute::ReplicaContext::current();
    grads = replica != nullptr && !variables.empty()
                ? tape.gradient(loss, sources, replica->stream_gradients(variables), &sparse_grads)
                : tape.gradient(loss, sources, &sparse_grads);
  }
  if (!variables.empty()) optimizer().apply_gradients(grads, variables, sparse_grads);
  update_metrics(loss, step.y, step.y_pred, step.sample_weight, step.rows);
  return get_metrics_result();
}

Logs Model::test_step(const Tree& batch) {
  auto [x, y, sample_weight] = unpack(batch);
  autograd::NoGradGuard no_grad;
  const StepResult step = forward_step(x, y, sample_weight, /*training=*/false);
  update_metrics(scalar_loss(step.loss), step.y, step.y_pred, step.sample_weight, step.rows);
  return get_metrics_result();
}

void Model::build_on_first_row(const Tree& batch) {
  // A subclassed model builds its layers as it first calls them, some perhaps in
  // compute_loss: a forward step with the loss on one row builds them all.
  const int64_t rows = std::min<int64_t>(batch_rows(batch, name()), 1);
  auto [x, y, sample_weight] = unpack(batch.map([&](const Tensor& t) { return t.first_axis_slice(0, rows); }));
  autograd::NoGradGuard no_grad;
  if (compiled() && !y.empty()) {
    forward_step(x, y, sample_weight, /*training=*/false);
  } else {
    (*this)(x, /*training=*/false);
  }
}

Tree Model::predict_step(const Tree& batch) {
  autograd::NoGradGuard no_grad;
  return whole_outputs((*this)(unpack(batch).x, /*training=*/false));
}

History Model::fit(const Tree& x, const Tree& y, FitOptions options) {
  if (options.validation_split < 0 || options.validation_split >= 1) {
    throw_error<ValueError>("{}: expected 0 <= validation_split < 1. Received: validation_split={}", name(),
                            options.validation_split);
  }
  Tree train_x = x, train_y = y;
  if (options.validation_split > 0) {
    if (options.validation_data) {
      throw_error<ValueError>("{}: give validation_data or validation_split, not both", name());
    }
    int64_t rows = num_rows(x, "x", name());
    int64_t split = static_cast<int64_t>(std::floor(static_cast<double>(rows) * (1.0 - options.validation_split)));
    train_x = slice_rows(x, 0, split);
    train_y = y.empty() ? y : slice_rows(y, 0, split);
    options.validation_data = arrays_dataset(slice_rows(x, split, rows), y.empty() ? y : slice_rows(y, split, rows),
                                             options.batch_size, std::nullopt, name());
  }
  std::optional<uint64_t> shuffle_seed;
  if (options.shuffle) {
    shuffle_seed = layers::next_generator().key();
    // Each worker of a job takes its rows of the same global batches, so the order is the
    // job's: rank 0's draw (the ranks' layer streams may differ, in seed or in draws).
    if (distribute::WorkerGroup* workers = distributed_steps().workers()) shuffle_seed = workers->chief_value(*shuffle_seed);
  }
  return fit(arrays_dataset(train_x, train_y, options.batch_size, shuffle_seed, name()), std::move(options));
}

History Model::fit(const data::Dataset& data, FitOptions options) {
  if (!compiled()) throw_error<ValueError>("{}: call compile() before fit()", name());
  check_fit_options(name(), data, options);
  const int64_t steps = steps_of(data, options.steps_per_epoch);
  auto history = std::make_shared<History>();
  for (const auto& c : options.callbacks) {
    if (auto user_history = std::dynamic_pointer_cast<History>(c.shared_ptr())) history = user_history;
  }
  CallbackList callbacks = make_callbacks(options.callbacks, this, {options.epochs, steps, options.verbose}, history);
  stop_training = false;
  const WorkerInput input(data, distributed_steps().workers(), name());
  // With steps_per_epoch, one iterator runs on across epochs (Keras); a new one starts
  // only when the data runs out.
  std::optional<WorkerInput::Pass> iterator;
  FitProgress progress{.epoch = options.initial_epoch, .iterator = &iterator, .callbacks = &callbacks};
  fit_progress_ = &progress;
  struct EndOfFit {
    Model* model;
    ~EndOfFit() {
      model->fit_progress_ = nullptr;
      model->resume_.reset();
    }
  } end_of_fit{this};
  Logs logs;
  callbacks.each([&](Callback& c) { c.on_train_begin(logs); });
  progress.in_train_begin = false;
  const std::optional<FitState> resumed = apply_resume(progress, input);
  // A multi-worker job merges the workers' metrics after each step only for callbacks
  // that read batch logs (verbose 1 does); otherwise once an epoch, sparing a collective
  // per step.
  const bool batch_logs = distributed_steps().merge_every_step(callbacks.any(&Callback::implements_train_batch_hooks));
  for (int epoch = progress.epoch; epoch < options.epochs && !stop_training; ++epoch) {
    progress.epoch = epoch;
    reset_metrics();
    // Resumed mid-epoch: the interrupted epoch's metrics and iterator carry on.
    const bool mid_epoch = resumed && epoch == resumed->epoch && resumed->step > 0;
    if (mid_epoch) set_metric_states(resumed->metric_states);
    progress.step = mid_epoch ? resumed->step : 0;
    callbacks.each([&](Callback& c) { c.on_epoch_begin(epoch, Logs{}); });
    if (!mid_epoch && (!iterator || options.steps_per_epoch <= 0)) iterator.emplace(input.pass(epoch));
    run_epoch_steps(progress, steps, batch_logs);
    distributed_steps().merge_worker_metrics();
    logs = get_metrics_result();
    if (!batch_logs && logs.contains("loss") && !std::isfinite(logs.at("loss"))) {
      throw_error<Error>("{}: the loss became {} during epoch {}; add callbacks::TerminateOnNaN to stop at the batch",
                         name(), logs.at("loss"), epoch + 1);
    }
    if (options.validation_data && (epoch + 1) % options.validation_freq == 0) {
      progress.validating = true;
      Logs val = run_evaluation(*options.validation_data, options.validation_steps, callbacks);
      progress.validating = false;
      logs.merge(val, "val_");
    }
    progress.epoch_ended = true;
    callbacks.each([&](Callback& c) { c.on_epoch_end(epoch, logs); });
    progress.epoch_ended = false;
  }
  callbacks.each([&](Callback& c) { c.on_train_end(logs); });
  return *history;
}

void Model::run_epoch_steps(FitProgress& progress, int64_t steps, bool batch_logs) {
  std::optional<WorkerInput::Pass>& iterator = *progress.iterator;
  CallbackList& callbacks = *progress.callbacks;
  while (steps < 0 || progress.step < steps) {
    std::optional<WorkerInput::Step> batch = iterator->next();
    if (!batch) {
      iterator.reset();
      break;
    }
    const int64_t step = progress.step;
    callbacks.each([&](Callback& c) { c.on_train_batch_begin(step, Logs{}); });
    Logs step_logs = distributed_steps().train(*batch, batch_logs);
    ++progress.step;
    ++progress.total_steps;
    callbacks.each([&](Callback& c) { c.on_train_batch_end(step, step_logs); });
    if (stop_training) break;
    if (step_logs.contains("loss") && !std::isfinite(step_logs.at("loss"))) {
      throw_error<Error>("{}: the loss became {} at epoch {}, batch {}; add callbacks::TerminateOnNaN to stop instead",
                         name(), step_logs.at("loss"), progress.epoch + 1, step);
    }
  }
}

Logs Model::run_evaluation(const data::Dataset& data, int64_t steps, CallbackList& callbacks) {
  reset_metrics();
  Logs logs;
  callbacks.each([&](Callback& c) { c.on_test_begin(logs); });
  const WorkerInput input(data, distributed_steps().workers(), name());
  const bool batch_logs = distributed_steps().merge_every_step(callbacks.any(&Callback::implements_test_batch_hooks));
  auto iterator = input.pass(0);
  for (int64_t step = 0; steps < 0 || step < steps; ++step) {
    std::optional<WorkerInput::Step> batch = iterator.next();
    if (!batch) break;
    callbacks.each([&](Callback& c) { c.on_test_batch_begin(step, Logs{}); });
    logs = distributed_steps().test(*batch, batch_logs);
    callbacks.each([&](Callback& c) { c.on_test_batch_end(step, logs); });
  }
  distributed_steps().merge_worker_metrics();
  logs = get_metrics_result();
  callbacks.each([&](Callback& c) { c.on_test_end(logs); });
  return logs;
}

Logs Model::evaluate(const data::Dataset& data, EvaluateOptions options) {
  if (!compiled()) throw_error<ValueError>("{}: call compile() before evaluate()", name());
  int64_t steps = steps_of(data, options.steps);
  CallbackList callbacks = make_callbacks(options.callbacks, this, {1, steps, options.verbose}, nullptr);
  return run_evaluation(data, options.steps, callbacks);
}

Logs Model::evaluate(const Tree& x, const Tree& y, EvaluateOptions options) {
  return evaluate(arrays_dataset(x, y, options.batch_size, std::nullopt, name()), std::move(options));
}

Tree Model::predict(const data::Dataset& data, PredictOptions options) {
  int64_t steps = steps_of(data, options.steps);
  CallbackList callbacks = make_callbacks(options.callbacks, this, {1, steps, options.verbose}, nullptr);
  callbacks.each([&](Callback& c) { c.on_predict_begin(Logs{}); });
  std::vector<std::vector<Tensor>> pieces;
  Tree structure;
  auto iterator = data.iterator(0);
  for (int64_t step = 0; options.steps < 0 || step < options.steps; ++step) {
    std::optional<Tree> batch = iterator.next();
    if (!batch) break;
    callbacks.each([&](Callback& c) { c.on_predict_batch_begin(step, Logs{}); });
    Tree out = distributed_steps().predict(*batch);
    std::vector<Tensor> leaves = out.flatten();
    if (pieces.empty()) {
      structure = out;
      pieces.resize(leaves.size());
    }
    for (size_t i = 0; i < leaves.size() && i < pieces.size(); ++i) pieces[i].push_back(leaves[i]);
    callbacks.each([&](Callback& c) { c.on_predict_batch_end(step, Logs{}); });
  }
  callbacks.each([&](Callback& c) { c.on_predict_end(Logs{}); });
  if (pieces.empty()) throw_error<ValueError>("{}: predict got no data", name());
  std::vector<Tensor> joined;
  for (auto& p : pieces) joined.push_back(p.size() == 1 ? p[0] : ops::concatenate(p, 0));
  return structure.unflatten(joined);
}

Tree Model::predict(const Tree& x, PredictOptions options) {
  return predict(arrays_dataset(x, Tree(), options.batch_size, std::nullopt, name()), std::move(options));
}

}  // namespace chorus::models
