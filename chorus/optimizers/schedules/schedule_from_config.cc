#include "chorus/optimizers/schedules/schedule_from_config.h"

#include <string>

#include "chorus/core/error.h"
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

std::optional<LearningRate> read_learning_rate(ConfigReader& reader, const std::string& key) {
  const nlohmann::json* value = reader.find(key);
  if (value == nullptr) return std::nullopt;
  if (value->is_number()) {
    // A negative rate would climb the loss; Keras's optimizers refuse it too.
    if (value->get<double>() < 0) {
      throw_error<ValueError>("{}: config key '{}': expected a learning rate >= 0, got {}", reader.owner(), key,
                              value->dump());
    }
    return LearningRate(value->get<double>());
  }
  if (value->is_object()) return LearningRate(schedule_from_config(*value));
  reader.wrong_type(key, "a number or a schedule config");
}

// LinearWarmup's "after" is a learning rate or a whole schedule config, which only this
// file can read: the method is defined here, so linear_warmup.cc needs no factory.
LinearWarmup LinearWarmup::from_config(const nlohmann::json& config) {
  ConfigReader reader("LinearWarmup", config);
  reader.string("name", "");
  reader.require({"warmup_steps", "after"});
  LinearWarmup schedule(reader.integer("warmup_steps", 0), *read_learning_rate(reader, "after"),
                        reader.number("initial_learning_rate", 0.0));
  reader.finish();
  return schedule;
}

std::shared_ptr<const LearningRateSchedule> schedule_from_config(const nlohmann::json& config) {
  return registry().from_config("schedule_from_config", config);
}

void register_schedule(std::string class_name, Registry<const LearningRateSchedule>::Factory factory) {
  registry().add("register_schedule", std::move(class_name), std::move(factory));
}

std::vector<std::string> registered_schedules() { return registry().names(); }

}  // namespace chorus::optimizers::schedules
