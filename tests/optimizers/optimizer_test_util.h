// Shared helpers for the optimizer tests: float32 variables from double values, a fixed
// sequence of random gradients, and a driver that runs an optimizer and a reference
// update (Keras's formula written out in double) side by side. Test threads only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/autograd/variable.h"
#include "chorus/core/creation.h"
#include "chorus/optimizers/optimizer.h"
#include "tests/testing/test_util.h"

namespace chorus::testing {

using autograd::Variable;
using Values = std::vector<double>;

inline Variable variable_of(const std::string& path, const Values& values, const Shape& shape) {
  return Variable(path, tensor_of(values, shape));
}

inline Values values_of(const Tensor& t) { return t.to_vector<double>(); }

// Random values in [lo, hi), rounded to float (so the reference starts where the float
// variable starts).
inline Values random_values(int64_t n, uint64_t seed, double lo = -1, double hi = 1) {
  return chorus::testing::random_tensor({n}, seed, lo, hi).to_vector<double>();
}

// The reference for one step: updates `var` (and its own slot state) from `grad` at
// Keras's step `step` (1 for the first update) with learning rate `lr`.
using ReferenceStep = std::function<void(Values& var, const Values& grad, int64_t step, double lr)>;

// Runs `steps` steps of `optimizer` on one variable of `n` elements (shape `shape` if
// given) against `reference`, checking the variable after every step.
inline void expect_matches_reference(optimizers::Optimizer& optimizer, const ReferenceStep& reference, int64_t n,
                                     int steps = 3, double rtol = 2e-5, double atol = 1e-6, uint64_t seed = 1) {
  Values expected = random_values(n, seed);
  const Variable var = variable_of("dense/kernel", expected, {n});
  for (int s = 0; s < steps; ++s) {
    const Values grad = random_values(n, seed * 100 + static_cast<uint64_t>(s) + 7, -2, 2);
    const double lr = optimizer.learning_rate();
    const Tensor g = tensor_of(grad, {n});
    optimizer.apply_gradients(std::vector<Tensor>{g}, std::vector<Variable>{var});
    reference(expected, grad, s + 1, lr);
    ASSERT_TRUE(chorus::testing::tensors_near(var.value(), tensor_of(expected, {n}), atol, rtol))
        << "step " << s + 1 << " of " << optimizer.name() << " on " << n << " elements";
  }
}

// Sizes that cover an empty tail, a sqrt block tail (256), and several parallel chunks.
inline const std::vector<int64_t>& test_sizes() {
  static const std::vector<int64_t> sizes = {1, 7, 1023, 40'001};
  return sizes;
}

}  // namespace chorus::testing
