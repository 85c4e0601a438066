// RMSprop: Keras's RMSprop (Hinton): divide the gradient by the root of a moving average
// of its square; optionally centered (subtract the squared moving average of the
// gradient) and with plain momentum. Slots per variable: velocity, then momentum (when
// momentum > 0) and average_gradient (when centered). Not thread-safe (see Optimizer).
//
//   RMSprop rmsprop({.learning_rate = 1e-3, .momentum = 0.9, .centered = true});
#pragma once

#include <optional>

#include "chorus/optimizers/optimizer.h"

namespace chorus::optimizers {

struct RMSpropOptions {
  LearningRate learning_rate = 0.001;  // a rate or a schedule
  double rho = 0.9;                    // discount of the moving average of g^2
  double momentum = 0.0;               // > 0 adds a momentum slot
  double epsilon = 1e-7;               // added to the average under the root
  bool centered = false;               // normalise by the estimated variance of g
  // The base optimizer's arguments (OptimizerOptions), unset by default.
  std::optional<double> weight_decay;
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
};

class RMSprop : public Optimizer {
 public:
  explicit RMSprop(RMSpropOptions options = {});
  // Defaults, with this learning rate: `RMSprop(1e-3)`.
  explicit RMSprop(LearningRate learning_rate)
      : RMSprop(RMSpropOptions{.learning_rate = std::move(learning_rate)}) {}

  double rho() const { return options_.rho; }
  double momentum() const { return options_.momentum; }
  double epsilon() const { return options_.epsilon; }
  bool centered() const { return options_.centered; }
  // The base config plus "rho", "momentum", "epsilon" and "centered".
  nlohmann::json get_config() const override;

 protected:
  void build_slots(const Variable& variable) override;
  void update_step(const Tensor& grad, const Variable& variable, size_t slot_index, double lr,
                   int64_t step) override;

 private:
  RMSpropOptions options_;  // the learning rate is the base's
};

}  // namespace chorus::optimizers
