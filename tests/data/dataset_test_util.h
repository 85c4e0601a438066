// Helpers for the Dataset tests: reading passes into comparable values and checking that
// a position restores exactly. Header-only; test threads only.
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/creation.h"
#include "chorus/data/dataset.h"

namespace chorus::testing {

// The int64 values of a pass whose elements are scalars (range, enumerate indices...).
inline std::vector<int64_t> scalars(const data::Dataset& ds, int64_t epoch = 0) {
  std::vector<int64_t> out;
  auto it = ds.iterator(epoch);
  while (auto e = it.next()) out.push_back(e->tensor().item<int64_t>());
  return out;
}

// A printable fingerprint of an element: its structure, shapes, dtypes and values
// (strings as bytes literals).
inline std::string fingerprint(const Tree& tree) {
  std::string out = tree.to_string() + ":";
  for (const Tensor& leaf : tree.flatten()) {
    if (leaf.dtype() == kString) {
      std::vector<std::string> words;
      for (const std::string& s : leaf.strings()) words.push_back(bytes_literal(s));
      out += fmt::format("[{}]", fmt::join(words, ","));
    } else {
      out += fmt::format("[{}]", fmt::join(leaf.to_vector<double>(), ","));
    }
  }
  return out;
}

inline std::vector<std::string> fingerprints(data::Iterator& it) {
  std::vector<std::string> out;
  while (auto e = it.next()) out.push_back(fingerprint(*e));
  return out;
}

inline std::vector<std::string> fingerprints(const data::Dataset& ds, int64_t epoch = 0) {
  auto it = ds.iterator(epoch);
  return fingerprints(it);
}

// For every k in `stops`: reads k elements of pass `epoch` of make(), saves the position
// (through its JSON text, as a checkpoint would), restores it into an iterator of a
// fresh make() (as a restarted process would) and checks that the rest of the pass is
// exactly what an uninterrupted pass yields. REQUIRES (checked): the pass yields at least
// one element.
template <class Make>
void expect_restores_exactly(Make make, const std::vector<int64_t>& stops, int64_t epoch = 0) {
  const std::vector<std::string> full = fingerprints(make(), epoch);
  ASSERT_FALSE(full.empty()) << "pass " << epoch << " yields nothing: there is no position to restore";
  for (int64_t k : stops) {
    if (k > static_cast<int64_t>(full.size())) continue;
    SCOPED_TRACE(fmt::format("restoring after {} of {} elements of pass {}", k, full.size(), epoch));
    data::Dataset first = make();
    auto it = first.iterator(epoch);
    for (int64_t i = 0; i < k; ++i) ASSERT_TRUE(it.next().has_value());
    const data::IteratorPosition saved{nlohmann::json::parse(it.position().state.dump())};
    auto resumed = make().iterator(epoch);
    resumed.restore(saved);
    const auto rest = fingerprints(resumed);
    ASSERT_EQ(rest.size(), full.size() - k);
    for (size_t i = 0; i < rest.size(); ++i) ASSERT_EQ(rest[i], full[k + i]) << "element " << k + i;
    // The original iterator is unaffected by saving and finishes the same way.
    const auto original_rest = fingerprints(it);
    ASSERT_EQ(original_rest, rest);
  }
}

}  // namespace chorus::testing
