// ExponentialDecay: Keras's schedule initial_learning_rate * decay_rate^(step / decay_steps),
// with an integer exponent when staircase. Immutable after construction: thread-safe.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "chorus/optimizers/learning_rate.h"

namespace chorus::optimizers::schedules {

class ExponentialDecay : public LearningRateSchedule {
 public:
  // Throws ValueError unless decay_steps > 0.
  ExponentialDecay(double initial_learning_rate, int64_t decay_steps, double decay_rate, bool staircase = false);

  // Computed in double (Keras computes in float32: values agree to float precision).
  double operator()(int64_t step) const override;
  // {"class_name": "ExponentialDecay", "config": {"initial_learning_rate", "decay_steps",
  // "decay_rate", "staircase", "name"}}.
  nlohmann::json get_config() const override;
  // From the inner "config" object. Throws ValueError on missing or unknown keys.
  static ExponentialDecay from_config(const nlohmann::json& config);

 private:
  double initial_learning_rate_;
  int64_t decay_steps_;
  double decay_rate_;
  bool staircase_;
};

}  // namespace chorus::optimizers::schedules
