#include "chorus/models/logs.h"

#include <algorithm>

#include "chorus/core/error.h"

namespace chorus::models {

void Logs::set(const std::string& name, double value) {
  for (auto& [key, v] : entries_) {
    if (key == name) {
      v = value;
      return;
    }
  }
  entries_.emplace_back(name, value);
}

bool Logs::contains(const std::string& name) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.first == name; });
}

double Logs::at(const std::string& name) const {
  for (const auto& [key, v] : entries_) {
    if (key == name) return v;
  }
  std::string names;
  for (const auto& [key, v] : entries_) names += (names.empty() ? "" : ", ") + key;
  throw_error<ValueError>("logs: no entry '{}'; the logs hold: {}", name, names.empty() ? "nothing" : names);
}

void Logs::merge(const Logs& other, const std::string& prefix) {
  for (const auto& [key, v] : other) set(prefix + key, v);
}

}  // namespace chorus::models
