// FitState: where a fit stands between two training steps, complete enough that a fit
// started again from it continues exactly as the uninterrupted one would (with the
// model's weights and optimizer state, which are saved beside it). Model::fit_state()
// takes it, Model::resume_fit() continues from it; BackupAndRestore stores it. A value.
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

}  // namespace chorus::models
