// Internal to the optimizers: reads the fields of a Keras-style config object
// ({"beta_1": 0.9, ...}) with typed defaults, and rejects keys nobody read, so a typo in
// a saved config is an error instead of a silently ignored setting. Messages name the
// object: "adam: config key 'beta_1': expected a number, got \"x\"". One reader per
// config; not thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/optimizers/learning_rate.h"
#include "chorus/optimizers/optimizer.h"

namespace chorus::optimizers {

class ConfigReader {
 public:
  // `owner` prefixes every message. Throws ValueError if `config` is not an object.
  ConfigReader(std::string owner, const nlohmann::json& config);

  bool has(const std::string& key) const;
  // Throws ValueError naming the first of `keys` that the config lacks.
  void require(std::initializer_list<const char*> keys) const;
  // The value at `key`, or `fallback` when absent. Throws ValueError on a wrong type.
  double number(const std::string& key, double fallback);
  int64_t integer(const std::string& key, int64_t fallback);
  bool boolean(const std::string& key, bool fallback);
  std::string string(const std::string& key, const std::string& fallback);
  // Absent or null gives nullopt.
  std::optional<double> optional_number(const std::string& key);
  // A list of numbers; absent gives an empty list.
  std::vector<double> numbers(const std::string& key);
  // A number >= 0 (a constant rate) or a schedule's {"class_name", "config"}.
  LearningRate learning_rate(const std::string& key, double fallback);
  // The raw value (marks the key read). REQUIRES: has(key).
  const nlohmann::json& raw(const std::string& key);

  // The base optimizer's keys (weight_decay, clipnorm, clipvalue, global_clipnorm), and
  // Keras's optimizer keys chorus does not implement, accepted only at their inert
  // values (use_ema false, loss_scale_factor null, ...).
  OptimizerOptions optimizer_options();

  // Throws ValueError naming the first key that no accessor read.
  void finish() const;

 private:
  const nlohmann::json& get(const std::string& key);
  [[noreturn]] void wrong_type(const std::string& key, const char* expected) const;

  std::string owner_;
  const nlohmann::json& config_;
  std::set<std::string> read_;
};

}  // namespace chorus::optimizers
