#include "chorus/optimizers/schedules/polynomial_decay.h"

#include <algorithm>
#include <cmath>

#include "chorus/core/config_reader.h"
#include "chorus/core/error.h"

namespace chorus::optimizers::schedules {

PolynomialDecay::PolynomialDecay(double initial_learning_rate, int64_t decay_steps, double end_learning_rate,
                                 double power, bool cycle)
    : initial_learning_rate_(initial_learning_rate),
      decay_steps_(decay_steps),
      end_learning_rate_(end_learning_rate),
      power_(power),
      cycle_(cycle) {
  if (decay_steps <= 0) throw_error<ValueError>("PolynomialDecay: expected decay_steps > 0, got {}", decay_steps);
}

double PolynomialDecay::operator()(int64_t step) const {
  double s = static_cast<double>(step);
  double horizon = static_cast<double>(decay_steps_);
  if (cycle_) {
    horizon *= step == 0 ? 1.0 : std::ceil(s / horizon);
  } else {
    s = std::min(s, horizon);
  }
  return (initial_learning_rate_ - end_learning_rate_) * std::pow(1.0 - s / horizon, power_) + end_learning_rate_;
}

nlohmann::json PolynomialDecay::get_config() const {
  return {{"class_name", "PolynomialDecay"},
          {"config",
           {{"initial_learning_rate", initial_learning_rate_},
            {"decay_steps", decay_steps_},
            {"end_learning_rate", end_learning_rate_},
            {"power", power_},
            {"cycle", cycle_},
            {"name", "PolynomialDecay"}}}};
}

PolynomialDecay PolynomialDecay::from_config(const nlohmann::json& config) {
  ConfigReader reader("PolynomialDecay", config);
  reader.string("name", "");
  reader.require({"initial_learning_rate", "decay_steps"});
  PolynomialDecay schedule(reader.number("initial_learning_rate", 0), reader.integer("decay_steps", 0),
                           reader.number("end_learning_rate", 0.0001), reader.number("power", 1.0),
                           reader.boolean("cycle", false));
  reader.finish();
  return schedule;
}

}  // namespace chorus::optimizers::schedules
