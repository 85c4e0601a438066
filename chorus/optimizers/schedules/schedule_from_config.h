// Rebuilds a learning-rate schedule from its get_config() output, as Keras's
// keras.optimizers.schedules.deserialize does. Thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/core/config_reader.h"
#include "chorus/core/registry.h"
#include "chorus/optimizers/learning_rate.h"

namespace chorus::optimizers::schedules {

// `config` is {"class_name": ..., "config": {...}} (Keras's "module" and
// "registered_name" keys are accepted and ignored). Knows ExponentialDecay,
// PolynomialDecay, CosineDecay, PiecewiseConstantDecay, LinearWarmup and the registered
// classes; throws ValueError listing them for any other class, or naming a bad config key.
std::shared_ptr<const LearningRateSchedule> schedule_from_config(const nlohmann::json& config);

// Makes a schedule class of the user's known to schedule_from_config (so an optimizer
// using it is rebuilt by load_model): `factory` receives its get_config(). Registering a
// name again replaces it. Throws ValueError for an empty name or factory.
void register_schedule(std::string class_name, Registry<const LearningRateSchedule>::Factory factory);
// The registered class names (built-in and the user's), sorted.
std::vector<std::string> registered_schedules();

// The learning rate at `key` of a config (an optimizer's learning_rate, LinearWarmup's
// after): a number >= 0 or a schedule's {"class_name", "config"}; nullopt when absent.
// Throws ValueError naming the reader's owner and the key for anything else.
std::optional<LearningRate> read_learning_rate(ConfigReader& reader, const std::string& key);

}  // namespace chorus::optimizers::schedules
