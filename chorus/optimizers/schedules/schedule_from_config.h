// Rebuilds a learning-rate schedule from its get_config() output, as Keras's
// keras.optimizers.schedules.deserialize does. Stateless; thread-safe.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "chorus/optimizers/learning_rate.h"

namespace chorus::optimizers::schedules {

// `config` is {"class_name": ..., "config": {...}} (Keras's "module" and
// "registered_name" keys are accepted and ignored). Knows ExponentialDecay,
// PolynomialDecay, CosineDecay, PiecewiseConstantDecay and LinearWarmup; throws
// ValueError listing them for any other class, or naming a bad config key.
std::shared_ptr<const LearningRateSchedule> schedule_from_config(const nlohmann::json& config);

}  // namespace chorus::optimizers::schedules
