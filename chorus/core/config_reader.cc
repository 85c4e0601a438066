#include "chorus/core/config_reader.h"

#include <algorithm>
#include <cassert>

#include "chorus/core/closest_names.h"

namespace chorus {
namespace {

using nlohmann::json;

// "a string", "an integer": the found half of a wrong-type message.
const char* json_type_name(const json& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "a boolean";
  if (value.is_number_integer()) return "an integer";
  if (value.is_number()) return "a float";
  if (value.is_string()) return "a string";
  if (value.is_array()) return "a list";
  return "an object";
}

// The known key within two edits of `key` (and closer than half its length), if any: a
// likely typo ('unitz' for 'units', 'beta1' for 'beta_1').
std::string closest(const std::string& key, const std::set<std::string>& known) {
  std::string best;
  size_t best_distance = std::min<size_t>(3, (key.size() + 1) / 2);
  for (const std::string& candidate : known) {
    const size_t distance = edit_distance(key, candidate);
    if (distance < best_distance) best = candidate, best_distance = distance;
  }
  return best;
}

}  // namespace

ConfigReader::ConfigReader(std::string owner, const json& config) : owner_(std::move(owner)), config_(config) {
  if (!config_.is_object()) throw_error<ValueError>("{}: expected a config object, got {}", owner_, config_.dump());
}

bool ConfigReader::has(const std::string& key) const { return config_.contains(key); }

void ConfigReader::require(std::initializer_list<const char*> keys) const {
  for (const char* key : keys) {
    if (!has(key)) throw_error<ValueError>("{}: config is missing '{}'", owner_, key);
  }
}

const json* ConfigReader::find(const std::string& key) {
  known_.insert(key);
  auto it = config_.find(key);
  return it == config_.end() ? nullptr : &*it;
}

const json& ConfigReader::raw(const std::string& key) {
  const json* found = find(key);
  assert(found != nullptr);
  return *found;
}

void ConfigReader::accept(std::initializer_list<const char*> keys) {
  for (const char* key : keys) known_.insert(key);
}

void ConfigReader::accept_inert(std::initializer_list<const char*> keys, const json& inert) {
  for (const char* key : keys) {
    const json* found = find(key);
    if (found != nullptr && !found->is_null() && *found != inert) unsupported(key);
  }
}

void ConfigReader::finish() const {
  for (const auto& [key, value] : config_.items()) {
    if (known_.contains(key)) continue;
    const std::string suggestion = closest(key, known_);
    throw_error<ValueError>("{}: unexpected config key '{}'{}", owner_, key,
                            suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion));
  }
}

void ConfigReader::wrong_type(const std::string& key, const std::string& expected) const {
  const json& value = config_.at(key);
  throw_error<ValueError>("{}: config key '{}': expected {}, got {} ({})", owner_, key, expected, value.dump(),
                          json_type_name(value));
}

void ConfigReader::unsupported(const std::string& key) const {
  throw_error<ValueError>("{}: {}={} is not supported", owner_, key, config_.at(key).dump());
}

}  // namespace chorus
