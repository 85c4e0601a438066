// PolynomialDecay: Keras's schedule from initial_learning_rate to end_learning_rate over
// decay_steps, (initial - end) * (1 - step / decay_steps)^power + end; with cycle the
// decay restarts at each multiple of decay_steps. Immutable: thread-safe.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "chorus/optimizers/learning_rate.h"

namespace chorus::optimizers::schedules {

class PolynomialDecay : public LearningRateSchedule {
 public:
  // Throws ValueError unless decay_steps > 0.
  PolynomialDecay(double initial_learning_rate, int64_t decay_steps, double end_learning_rate = 0.0001,
                  double power = 1.0, bool cycle = false);

  // Without cycle, steps past decay_steps stay at end_learning_rate. With cycle, the
  // horizon is the first multiple of decay_steps >= step (decay_steps itself at step 0).
  double operator()(int64_t step) const override;
  // {"class_name": "PolynomialDecay", "config": {"initial_learning_rate", "decay_steps",
  // "end_learning_rate", "power", "cycle", "name"}}.
  nlohmann::json get_config() const override;
  // From the inner "config" object. Throws ValueError on missing or unknown keys.
  static PolynomialDecay from_config(const nlohmann::json& config);

 private:
  double initial_learning_rate_;
  int64_t decay_steps_;
  double end_learning_rate_;
  double power_;
  bool cycle_;
};

}  // namespace chorus::optimizers::schedules
