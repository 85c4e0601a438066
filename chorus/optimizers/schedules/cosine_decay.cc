#include "chorus/optimizers/schedules/cosine_decay.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "chorus/core/config_reader.h"
#include "chorus/core/error.h"

namespace chorus::optimizers::schedules {

CosineDecay::CosineDecay(double initial_learning_rate, int64_t decay_steps, double alpha,
                         std::optional<double> warmup_target, int64_t warmup_steps)
    : initial_learning_rate_(initial_learning_rate),
      decay_steps_(decay_steps),
      alpha_(alpha),
      warmup_target_(warmup_target),
      warmup_steps_(warmup_steps) {
  if (decay_steps <= 0) throw_error<ValueError>("CosineDecay: expected decay_steps > 0, got {}", decay_steps);
  if (warmup_steps < 0) throw_error<ValueError>("CosineDecay: expected warmup_steps >= 0, got {}", warmup_steps);
}

// `step` is counted from the start of the decay and already clamped to decay_steps.
double CosineDecay::decay(double step, double from) const {
  const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * step / static_cast<double>(decay_steps_)));
  return from * ((1.0 - alpha_) * cosine + alpha_);
}

double CosineDecay::operator()(int64_t step) const {
  const double s = static_cast<double>(step), decay_steps = static_cast<double>(decay_steps_);
  if (!warmup_target_) return decay(std::min(s, decay_steps), initial_learning_rate_);
  const double warmup_steps = static_cast<double>(warmup_steps_);
  const double clamped = std::min(s, decay_steps + warmup_steps);
  if (clamped < warmup_steps) {
    return (*warmup_target_ - initial_learning_rate_) * (clamped / warmup_steps) + initial_learning_rate_;
  }
  return decay(clamped - warmup_steps, *warmup_target_);
}

nlohmann::json CosineDecay::get_config() const {
  return {{"class_name", "CosineDecay"},
          {"config",
           {{"initial_learning_rate", initial_learning_rate_},
            {"decay_steps", decay_steps_},
            {"alpha", alpha_},
            {"name", "CosineDecay"},
            {"warmup_target", warmup_target_ ? nlohmann::json(*warmup_target_) : nlohmann::json(nullptr)},
            {"warmup_steps", warmup_steps_}}}};
}

CosineDecay CosineDecay::from_config(const nlohmann::json& config) {
  ConfigReader reader("CosineDecay", config);
  reader.string("name", "");
  reader.require({"initial_learning_rate", "decay_steps"});
  CosineDecay schedule(reader.number("initial_learning_rate", 0), reader.integer("decay_steps", 0),
                       reader.number("alpha", 0.0), reader.optional_number("warmup_target"),
                       reader.integer("warmup_steps", 0));
  reader.finish();
  return schedule;
}

}  // namespace chorus::optimizers::schedules
