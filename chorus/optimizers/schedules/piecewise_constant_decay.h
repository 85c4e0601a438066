// PiecewiseConstantDecay: Keras's step function of the optimizer step: values[0] while
// step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i], and
// values.back() after the last boundary. Immutable: thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/optimizers/learning_rate.h"

namespace chorus::optimizers::schedules {

class PiecewiseConstantDecay : public LearningRateSchedule {
 public:
  // Throws ValueError unless values has one more element than boundaries and boundaries
  // increase strictly.
  PiecewiseConstantDecay(std::vector<int64_t> boundaries, std::vector<double> values);

  double operator()(int64_t step) const override;
  // {"class_name": "PiecewiseConstantDecay", "config": {"boundaries", "values", "name"}}.
  nlohmann::json get_config() const override;
  // From the inner "config" object. Throws ValueError on missing or unknown keys.
  static PiecewiseConstantDecay from_config(const nlohmann::json& config);

 private:
  std::vector<int64_t> boundaries_;
  std::vector<double> values_;
};

}  // namespace chorus::optimizers::schedules
