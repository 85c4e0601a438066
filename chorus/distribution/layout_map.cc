#include "chorus/distribution/layout_map.h"

#include <re2/re2.h>

#include "chorus/core/error.h"

namespace chorus::distribution {

TensorLayout& LayoutMap::operator[](const std::string& key) {
  for (auto& [k, layout] : entries_) {
    if (k == key) return layout;
  }
  return entries_.emplace_back(key, TensorLayout()).second;
}

std::optional<TensorLayout> LayoutMap::get(const std::string& path) const {
  for (const auto& [key, layout] : entries_) {
    if (key == path) return layout;
  }
  const std::pair<std::string, TensorLayout>* found = nullptr;
  for (const auto& entry : entries_) {
    const RE2 pattern(entry.first, RE2::Quiet);
    if (!pattern.ok()) {
      throw_error<ValueError>("LayoutMap: key '{}' is not a valid regular expression: {}", entry.first,
                              pattern.error());
    }
    if (!RE2::FullMatch(path, pattern)) continue;
    if (found != nullptr) {
      throw_error<ValueError>("LayoutMap: '{}' matches more than one key: '{}' and '{}'; each path may match one",
                              path, found->first, entry.first);
    }
    found = &entry;
  }
  return found != nullptr ? std::optional<TensorLayout>(found->second) : std::nullopt;
}

}  // namespace chorus::distribution
