#include "chorus/optimizers/schedules/schedule_from_config.h"

#include <string>

#include "chorus/core/error.h"
#include "chorus/optimizers/config_reader.h"
#include "chorus/optimizers/schedules/cosine_decay.h"
#include "chorus/optimizers/schedules/exponential_decay.h"
#include "chorus/optimizers/schedules/linear_warmup.h"
#include "chorus/optimizers/schedules/piecewise_constant_decay.h"
#include "chorus/optimizers/schedules/polynomial_decay.h"

namespace chorus::optimizers::schedules {

namespace {

template <class Schedule>
std::shared_ptr<const LearningRateSchedule> make(const nlohmann::json& config) {
  return std::make_shared<Schedule>(Schedule::from_config(config));
}

Registry<const LearningRateSchedule>& registry() {
  static Registry<const LearningRateSchedule> instance("schedule", {
      {"ExponentialDecay", make<ExponentialDecay>},
      {"PolynomialDecay", make<PolynomialDecay>},
      {"CosineDecay", make<CosineDecay>},
      {"PiecewiseConstantDecay", make<PiecewiseConstantDecay>},
      {"LinearWarmup", make<LinearWarmup>},
  });
  return instance;
}

}  // namespace

std::shared_ptr<const LearningRateSchedule> schedule_from_config(const nlohmann::json& config) {
  ConfigReader reader("schedule_from_config", config);
  reader.require({"class_name", "config"});
  const std::string class_name = reader.string("class_name", "");
  reader.string("module", "");
  reader.string("registered_name", "");
  const nlohmann::json& inner = reader.raw("config");
  reader.finish();
  return registry().make("schedule_from_config", class_name, inner);
}

void register_schedule(std::string class_name, Registry<const LearningRateSchedule>::Factory factory) {
  registry().add("register_schedule", std::move(class_name), std::move(factory));
}

}  // namespace chorus::optimizers::schedules
