#include "chorus/optimizers/schedules/exponential_decay.h"

#include <cmath>

#include "chorus/core/config_reader.h"
#include "chorus/core/error.h"

namespace chorus::optimizers::schedules {

ExponentialDecay::ExponentialDecay(double initial_learning_rate, int64_t decay_steps, double decay_rate,
                                   bool staircase)
    : initial_learning_rate_(initial_learning_rate),
      decay_steps_(decay_steps),
      decay_rate_(decay_rate),
      staircase_(staircase) {
  if (decay_steps <= 0) throw_error<ValueError>("ExponentialDecay: expected decay_steps > 0, got {}", decay_steps);
}

double ExponentialDecay::operator()(int64_t step) const {
  double p = static_cast<double>(step) / static_cast<double>(decay_steps_);
  if (staircase_) p = std::floor(p);
  return initial_learning_rate_ * std::pow(decay_rate_, p);
}

nlohmann::json ExponentialDecay::get_config() const {
  return {{"class_name", "ExponentialDecay"},
          {"config",
           {{"initial_learning_rate", initial_learning_rate_},
            {"decay_steps", decay_steps_},
            {"decay_rate", decay_rate_},
            {"staircase", staircase_},
            {"name", "ExponentialDecay"}}}};
}

ExponentialDecay ExponentialDecay::from_config(const nlohmann::json& config) {
  ConfigReader reader("ExponentialDecay", config);
  reader.string("name", "");
  reader.require({"initial_learning_rate", "decay_steps", "decay_rate"});
  ExponentialDecay schedule(reader.number("initial_learning_rate", 0), reader.integer("decay_steps", 0),
                            reader.number("decay_rate", 0), reader.boolean("staircase", false));
  reader.finish();
  return schedule;
}

}  // namespace chorus::optimizers::schedules
