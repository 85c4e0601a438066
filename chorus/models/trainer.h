// Trainer: the loop behind Model::fit, evaluate and predict (Keras's Trainer): epochs,
// callbacks, validation and resuming a fit, over the model's StepFunctions. Made by
// the model for one call; borrows the model; used by the calling thread only.
//
// The step flow (docs/architecture.md):
//   Trainer::fit ─ epochs, callbacks (each callback's fit() is this trainer)
//     └ StepFunctions::train(batch)            DistributedSteps: the eager step
//         └ StepRunner::run                    ReplicaRunner / MeshRunner: a slice per replica
//             └ on each replica's thread: StepContext{replica, metric copies} + StepScope
//                 └ Model::train_step(slice)   call → compute_loss → tape.gradient
//                     ├ gradients stream into the replica's GradientReducer buckets
//                     ├ Optimizer::apply_gradients → the replica reduces; replica 0 updates
//                     └ update_metrics → the replica's copies, merged after the step
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "chorus/core/tree.h"
#include "chorus/data/dataset.h"
#include "chorus/models/fit_state.h"
#include "chorus/models/history.h"
#include "chorus/models/logs.h"
#include "chorus/models/model.h"
#include "chorus/models/step_functions.h"
#include "chorus/models/worker_input.h"

namespace chorus::models {

class CallbackList;

class Trainer final : public FitControl {
 public:
  // `model` must outlive this.
  explicit Trainer(Model& model) : model_(model) {}
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Model::fit, evaluate and predict, as documented there.
  History fit(const data::Dataset& data, FitOptions options);
  History fit(const Tree& x, const Tree& y, FitOptions options);
  Logs evaluate(const data::Dataset& data, const EvaluateOptions& options);
  Logs evaluate(const Tree& x, const Tree& y, const EvaluateOptions& options);
  Tree predict(const data::Dataset& data, const PredictOptions& options);
  Tree predict(const Tree& x, const PredictOptions& options);

  // FitControl: the callbacks of this trainer's fit ask it while the fit runs.
  FitState fit_state() const override;
  void resume_fit(FitState state) override;

 private:
  // While fit runs: its loop's counters and iterator.
  struct FitProgress {
    int epoch = 0;
    int64_t step = 0;  // the steps of `epoch` done
    int64_t total_steps = 0;
    bool in_train_begin = true;  // resume_fit() is allowed only then
    bool epoch_ended = false;    // inside on_epoch_end: fit_state() is the next epoch's start
    bool validating = false;     // the metrics are the validation's: no fit_state()
    std::optional<WorkerInput::Pass>* iterator = nullptr;
    CallbackList* callbacks = nullptr;
  };

  // Epoch progress.epoch: its steps, then validation when due; returns its logs.
  Logs run_epoch(FitProgress& progress, const WorkerInput& input, const std::optional<FitState>& resumed,
                 const FitOptions& options, int64_t steps, bool batch_logs);
  // One epoch's training steps, from progress.step (fit's inner loop).
  // Returns the last step's logs (empty when none ran).
  Logs run_epoch_steps(FitProgress& progress, int64_t steps, bool batch_logs);
  // Keras's _get_metrics_result_or_logs: the metrics' results, unless the last step
  // returned logs of other names (a custom train_step's or test_step's), which stand.
  Logs metrics_result_or(const Logs& last_step_logs) const;
  Logs run_evaluation(const data::Dataset& data, int64_t steps, CallbackList& callbacks);
  // Continues from resume_ (if set) after on_train_begin: sets the progress, the
  // iterator and everything fit_state() saved but the metrics (restored at the epoch's
  // start). Returns the state, or nullopt when not resuming.
  std::optional<FitState> apply_resume(FitProgress& progress, const WorkerInput& input);
  void set_metric_states(const std::vector<double>& states);
  // The model's steps for this compile, made on first use.
  StepFunctions& step_functions();

  Model& model_;
  // While fit runs: its progress (fit_state() reads it), and the state resume_fit()
  // asked to continue from.
  FitProgress* progress_ = nullptr;
  std::optional<FitState> resume_;
};

}  // namespace chorus::models
