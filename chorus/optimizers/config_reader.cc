#include "chorus/optimizers/config_reader.h"

#include <cmath>

#include "chorus/core/error.h"
#include "chorus/optimizers/schedules/schedule_from_config.h"

namespace chorus::optimizers {

using nlohmann::json;

ConfigReader::ConfigReader(std::string owner, const json& config) : owner_(std::move(owner)), config_(config) {
  if (!config_.is_object()) throw_error<ValueError>("{}: expected a config object, got {}", owner_, config_.dump());
}

bool ConfigReader::has(const std::string& key) const { return config_.contains(key); }

void ConfigReader::require(std::initializer_list<const char*> keys) const {
  for (const char* key : keys) {
    if (!has(key)) throw_error<ValueError>("{}: config is missing '{}'", owner_, key);
  }
}

const json& ConfigReader::get(const std::string& key) {
  read_.insert(key);
  return config_.at(key);
}

const json& ConfigReader::raw(const std::string& key) { return get(key); }

void ConfigReader::wrong_type(const std::string& key, const char* expected) const {
  throw_error<ValueError>("{}: config key '{}': expected {}, got {}", owner_, key, expected, config_.at(key).dump());
}

double ConfigReader::number(const std::string& key, double fallback) {
  if (!has(key)) return fallback;
  const json& value = get(key);
  if (!value.is_number()) wrong_type(key, "a number");
  return value.get<double>();
}

int64_t ConfigReader::integer(const std::string& key, int64_t fallback) {
  if (!has(key)) return fallback;
  const json& value = get(key);
  // Keras writes Python ints, but a float with an integral value (1000.0) is accepted.
  if (value.is_number_integer()) return value.get<int64_t>();
  if (!value.is_number_float() || std::floor(value.get<double>()) != value.get<double>()) {
    wrong_type(key, "an integer");
  }
  return static_cast<int64_t>(value.get<double>());
}

bool ConfigReader::boolean(const std::string& key, bool fallback) {
  if (!has(key)) return fallback;
  const json& value = get(key);
  if (!value.is_boolean()) wrong_type(key, "a boolean");
  return value.get<bool>();
}

std::string ConfigReader::string(const std::string& key, const std::string& fallback) {
  if (!has(key)) return fallback;
  const json& value = get(key);
  if (value.is_null()) return fallback;
  if (!value.is_string()) wrong_type(key, "a string");
  return value.get<std::string>();
}

std::optional<double> ConfigReader::optional_number(const std::string& key) {
  if (!has(key) || get(key).is_null()) return std::nullopt;
  return number(key, 0);
}

std::vector<double> ConfigReader::numbers(const std::string& key) {
  if (!has(key)) return {};
  const json& value = get(key);
  if (!value.is_array()) wrong_type(key, "a list of numbers");
  std::vector<double> out;
  for (const json& item : value) {
    if (!item.is_number()) wrong_type(key, "a list of numbers");
    out.push_back(item.get<double>());
  }
  return out;
}

LearningRate ConfigReader::learning_rate(const std::string& key, double fallback) {
  if (!has(key)) return fallback;
  const json& value = get(key);
  if (value.is_number()) {
    // A negative rate would climb the loss; Keras's optimizers refuse it too.
    if (value.get<double>() < 0) {
      throw_error<ValueError>("{}: config key '{}': expected a learning rate >= 0, got {}", owner_, key, value.dump());
    }
    return value.get<double>();
  }
  if (value.is_object()) return schedules::schedule_from_config(value);
  wrong_type(key, "a number or a schedule config");
}

OptimizerOptions ConfigReader::optimizer_options() {
  OptimizerOptions options;
  options.weight_decay = optional_number("weight_decay");
  options.clipnorm = optional_number("clipnorm");
  options.clipvalue = optional_number("clipvalue");
  options.global_clipnorm = optional_number("global_clipnorm");
  // Keras's get_config writes these too; chorus implements none of them, so a config
  // that turns one on is refused rather than trained differently.
  if (boolean("use_ema", false)) throw_error<ValueError>("{}: use_ema=true is not supported", owner_);
  number("ema_momentum", 0.99);
  for (const char* key : {"ema_overwrite_frequency", "loss_scale_factor", "gradient_accumulation_steps"}) {
    if (has(key) && !get(key).is_null()) {
      throw_error<ValueError>("{}: {}={} is not supported", owner_, key, config_.at(key).dump());
    }
  }
  return options;
}

void ConfigReader::finish() const {
  for (const auto& [key, value] : config_.items()) {
    if (!read_.contains(key)) {
      throw_error<ValueError>("{}: unknown config key '{}' (value {})", owner_, key, value.dump());
    }
  }
}

}  // namespace chorus::optimizers
