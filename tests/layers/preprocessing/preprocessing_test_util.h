// Helpers the preprocessing layer tests share: building string and int tensors and
// checking outputs against the values Keras documents. Header-only; test threads only.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chorus/core/creation.h"
#include "chorus/core/tensor.h"

namespace chorus::testing {

inline Tensor strings(const Shape& shape, std::vector<std::string> values) {
  return Tensor::from_strings(shape, std::move(values));
}

inline Tensor ints(const Shape& shape, const std::vector<int64_t>& values) { return from_values(values, shape); }

inline std::vector<std::string> string_values(const Tensor& t) {
  return {t.strings().begin(), t.strings().end()};
}

// `t` is int64 of `shape` holding `values`.
inline void expect_ints(const Tensor& t, const Shape& shape, const std::vector<int64_t>& values) {
  EXPECT_EQ(t.dtype(), kInt64);
  EXPECT_EQ(t.shape(), shape);
  EXPECT_EQ(t.to_vector<int64_t>(), values);
}

// `t` is float32 of `shape` holding `values` (to 1e-6).
inline void expect_floats(const Tensor& t, const Shape& shape, const std::vector<float>& values, float tol = 1e-6f) {
  EXPECT_EQ(t.dtype(), kFloat32);
  ASSERT_EQ(t.shape(), shape);
  const auto got = t.to_vector<float>();
  for (size_t i = 0; i < values.size(); ++i) EXPECT_NEAR(got[i], values[i], tol) << "element " << i;
}

// The names the preprocessing layer tests use beside layer_test_names': a test says
// `using namespace testing::preprocessing_test_names;` in its anonymous namespace once.
namespace preprocessing_test_names {
using chorus::testing::expect_floats;
using chorus::testing::expect_ints;
using chorus::testing::ints;
using chorus::testing::string_values;
using chorus::testing::strings;
}  // namespace preprocessing_test_names

}  // namespace chorus::testing
