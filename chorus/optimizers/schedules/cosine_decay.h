// CosineDecay: Keras's cosine decay with an optional linear warmup. Without warmup_target
// the rate falls from initial_learning_rate to initial * alpha over decay_steps; with it,
// it first rises linearly from initial_learning_rate to warmup_target over warmup_steps,
// then falls from warmup_target to warmup_target * alpha over decay_steps. Immutable:
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "chorus/optimizers/learning_rate.h"

namespace chorus::optimizers::schedules {

class CosineDecay : public LearningRateSchedule {
 public:
  // Throws ValueError unless decay_steps > 0 and warmup_steps >= 0.
  CosineDecay(double initial_learning_rate, int64_t decay_steps, double alpha = 0.0,
              std::optional<double> warmup_target = std::nullopt, int64_t warmup_steps = 0);

  double operator()(int64_t step) const override;
  // {"class_name": "CosineDecay", "config": {"initial_learning_rate", "decay_steps",
  // "alpha", "name", "warmup_target" (null without warmup), "warmup_steps"}}.
  nlohmann::json get_config() const override;
  // From the inner "config" object. Throws ValueError on missing or unknown keys.
  static CosineDecay from_config(const nlohmann::json& config);

 private:
  double decay(double step, double from) const;

  double initial_learning_rate_;
  int64_t decay_steps_;
  double alpha_;
  std::optional<double> warmup_target_;
  int64_t warmup_steps_;
};

}  // namespace chorus::optimizers::schedules
