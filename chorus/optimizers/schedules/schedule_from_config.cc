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

std::shared_ptr<const LearningRateSchedule> schedule_from_config(const nlohmann::json& config) {
  ConfigReader reader("schedule_from_config", config);
  reader.require({"class_name", "config"});
  const std::string class_name = reader.string("class_name", "");
  reader.string("module", "");
  reader.string("registered_name", "");
  const nlohmann::json& inner = reader.raw("config");
  reader.finish();
  if (class_name == "ExponentialDecay") return std::make_shared<ExponentialDecay>(ExponentialDecay::from_config(inner));
  if (class_name == "PolynomialDecay") return std::make_shared<PolynomialDecay>(PolynomialDecay::from_config(inner));
  if (class_name == "CosineDecay") return std::make_shared<CosineDecay>(CosineDecay::from_config(inner));
  if (class_name == "PiecewiseConstantDecay") {
    return std::make_shared<PiecewiseConstantDecay>(PiecewiseConstantDecay::from_config(inner));
  }
  if (class_name == "LinearWarmup") return std::make_shared<LinearWarmup>(LinearWarmup::from_config(inner));
  throw_error<ValueError>(
      "schedule_from_config: unknown schedule class '{}': expected one of ExponentialDecay, PolynomialDecay, "
      "CosineDecay, PiecewiseConstantDecay, LinearWarmup",
      class_name);
}

}  // namespace chorus::optimizers::schedules
