// LinearWarmup: a linear ramp from initial_learning_rate to the rate another schedule (or
// constant) starts at, over warmup_steps, then that schedule shifted by warmup_steps.
// CosineDecay's own warmup_target is the same ramp for cosine decay; this wraps any
// schedule (chorus's addition, not a Keras class). Immutable: thread-safe.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "chorus/optimizers/learning_rate.h"

namespace chorus::optimizers::schedules {

class LinearWarmup : public LearningRateSchedule {
 public:
  // rate(step) = initial + (after(0) - initial) * step / warmup_steps for step <
  // warmup_steps, else after(step - warmup_steps). Throws ValueError if warmup_steps < 0.
  LinearWarmup(int64_t warmup_steps, LearningRate after, double initial_learning_rate = 0.0);

  double operator()(int64_t step) const override;
  // {"class_name": "LinearWarmup", "config": {"warmup_steps", "initial_learning_rate",
  // "after" (a number or the schedule's config), "name"}}.
  nlohmann::json get_config() const override;
  // From the inner "config" object. Throws ValueError on missing or unknown keys.
  // Defined with schedule_from_config (schedule_from_config.cc), which reads "after".
  static LinearWarmup from_config(const nlohmann::json& config);

 private:
  int64_t warmup_steps_;
  LearningRate after_;
  double initial_learning_rate_;
};

}  // namespace chorus::optimizers::schedules
