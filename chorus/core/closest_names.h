// The names nearest a mistyped one, for errors that say what was probably meant (a config
// key, a LayoutMap key that matches no variable). Pure functions; thread-safe.
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace chorus {

// Levenshtein distance: the fewest one-character insertions, deletions and substitutions
// that turn `a` into `b`.
inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Up to `count` of `candidates`, nearest to `name` first; equally near ones keep their order.
inline std::vector<std::string> closest_names(std::string_view name, std::span<const std::string> candidates,
                                              size_t count) {
  std::vector<std::pair<size_t, size_t>> ranked;  // (distance, index)
  ranked.reserve(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) ranked.emplace_back(edit_distance(name, candidates[i]), i);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < std::min(count, ranked.size()); ++i) out.push_back(candidates[ranked[i].second]);
  return out;
}

}  // namespace chorus
