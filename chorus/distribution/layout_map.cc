#include "chorus/distribution/layout_map.h"

#include <re2/re2.h>

#include <algorithm>
#include <memory>

#include "chorus/core/error.h"

namespace chorus::distribution {

TensorLayout& LayoutMap::operator[](const std::string& key) {
  for (auto& [k, layout] : entries_) {
    if (k == key) return layout;
  }
  return entries_.emplace_back(key, TensorLayout()).second;
}

namespace {

std::unique_ptr<RE2> compile_key(const std::string& key) {
  auto pattern = std::make_unique<RE2>(key, RE2::Quiet);
  if (!pattern->ok()) {
    throw_error<ValueError>("LayoutMap: key '{}' is not a valid regular expression: {}", key, pattern->error());
  }
  return pattern;
}

}  // namespace

std::optional<TensorLayout> LayoutMap::get(const std::string& path) const {
  for (const auto& [key, layout] : entries_) {
    if (key == path) return layout;
  }
  const std::pair<std::string, TensorLayout>* found = nullptr;
  for (const auto& entry : entries_) {
    if (!RE2::FullMatch(path, *compile_key(entry.first))) continue;
    if (found != nullptr) {
      throw_error<ValueError>("LayoutMap: '{}' matches more than one key: '{}' and '{}'; each path may match one",
                              path, found->first, entry.first);
    }
    found = &entry;
  }
  return found != nullptr ? std::optional<TensorLayout>(found->second) : std::nullopt;
}

std::vector<std::string> LayoutMap::unmatched_keys(std::span<const std::string> paths) const {
  std::vector<std::string> out;
  for (const auto& entry : entries_) {
    const std::unique_ptr<RE2> pattern = compile_key(entry.first);
    const bool matched = std::any_of(paths.begin(), paths.end(), [&](const std::string& path) {
      return path == entry.first || RE2::FullMatch(path, *pattern);
    });
    if (!matched) out.push_back(entry.first);
  }
  return out;
}

std::string LayoutMap::to_cpp(const std::string& variable) const {
  const auto literal = [](const std::string& text) {  // a regular expression's backslashes escaped
    std::string out = "\"";
    for (const char c : text) out += c == '\\' || c == '"' ? std::string{'\\', c} : std::string{c};
    return out + "\"";
  };
  std::string out;
  for (const auto& [key, layout] : entries_) {
    std::string axes;
    for (const auto& axis : layout.axes()) axes += (axes.empty() ? "" : ", ") + (axis ? literal(*axis) : "std::nullopt");
    out += variable + "[" + literal(key) + "] = {" + axes + "};\n";
  }
  return out;
}

}  // namespace chorus::distribution
