// FitState: where a fit stands between two training steps, complete enough that a fit
// started again from it continues exactly as the uninterrupted one would (with the
// model's weights and optimizer state, which are saved beside it). A callback takes it
// from the running fit (Callback::fit(), a FitControl) and continues from it with
// resume_fit(); BackupAndRestore stores it. A value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chorus/data/dataset.h"
#include "chorus/models/callback.h"

namespace chorus::models {

struct FitState {
  int epoch = 0;            // the epoch in progress, 0-based
  int64_t step = 0;         // the steps of `epoch` done
  int64_t total_steps = 0;  // the steps of every epoch done
  // The training data's iterator when one runs on into the next step (mid-epoch, or
  // across epochs with steps_per_epoch): the pass it iterates and its position.
  std::optional<int64_t> pass;
  data::IteratorPosition position;
  // The running metrics of `epoch` (Model::metrics() states laid end to end).
  std::vector<double> metric_states;
  // The optimizer's rate when it is a constant (callbacks may have changed it).
  std::optional<double> learning_rate;
  // Each Dropout's object path (models/object_paths.h) and masks drawn, in layer order.
  std::vector<std::pair<std::string, uint64_t>> dropout_calls;
  // The states of the fit's callbacks that have one, in order.
  std::vector<CallbackState> callbacks;
};

// What a callback may ask of the fit running its hooks (Callback::fit()). The Trainer
// running the fit implements it; valid from on_train_begin to on_train_end.
class FitControl {
 public:
  // Where the fit stands after the hook that is running — after on_train_batch_end(k),
  // step k + 1 of the epoch; after on_epoch_end(e), the start of epoch e + 1. Throws
  // ValueError during validation, and in a multi-worker fit mid-epoch unless a callback
  // implements the batch hooks (the workers' metrics are merged only then).
  virtual FitState fit_state() const = 0;
  // From on_train_begin: continue this fit from `state` (fit_state() of an earlier run of
  // the same program, whose weights and optimizer state the caller has restored) instead
  // of from initial_epoch. fit then restores the data position, metrics, learning rate,
  // dropout streams and callback states, and runs on as the interrupted fit would have.
  // Throws ValueError from any other hook.
  virtual void resume_fit(FitState state) = 0;

 protected:
  ~FitControl() = default;
};

}  // namespace chorus::models
