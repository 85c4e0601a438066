// AdamW: Adam with decoupled weight decay on by default (weight_decay 0.004), as in
// Keras 3, where it is exactly Adam plus the base optimizer's weight decay. Not
// thread-safe (see Optimizer).
//
//   AdamW adamw({.learning_rate = 1e-3, .weight_decay = 0.01});
#pragma once

#include <optional>

#include "chorus/optimizers/adam.h"

namespace chorus::optimizers {

// Keras's argument order: weight_decay comes right after the learning rate.
struct AdamWOptions {
  LearningRate learning_rate = 0.001;  // a rate or a schedule
  double weight_decay = 0.004;         // var -= var * weight_decay * lr before each step
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  // The remaining base optimizer's arguments, unset by default.
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
};

class AdamW : public Adam {
 public:
  explicit AdamW(AdamWOptions options = {});
  // Defaults, with this learning rate: `AdamW(1e-3)`.
  explicit AdamW(LearningRate learning_rate) : AdamW(AdamWOptions{.learning_rate = std::move(learning_rate)}) {}
};

}  // namespace chorus::optimizers
