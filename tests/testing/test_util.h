// Shared test helpers: random inputs, tensor comparison, and the numerical gradient
// check every differentiable op goes through. Header-only; used from test threads only.
#pragma once

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/autograd/tape.h"
#include "chorus/core/creation.h"
#include "chorus/core/random.h"
#include "chorus/core/tensor.h"
#include "chorus/mixed_precision/dtype_policy.h"

namespace chorus::testing {

// Uniform floats in [lo, hi): never all zeros, reproducible by seed.
// Same shape, dtype and bytes: what "bitwise identical" means for results that must not
// depend on thread or replica counts.
inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// A float32 tensor of `shape` holding `values` (given in double, as references compute).
inline Tensor tensor_of(const std::vector<double>& values, const Shape& shape) {
  std::vector<float> f(values.begin(), values.end());
  return from_values<float>(f, shape);
}

inline Tensor random_tensor(const Shape& shape, uint64_t seed, double lo = -1, double hi = 1, DType dtype = kFloat32) {
  Generator gen(seed);
  return uniform(shape, gen, lo, hi, dtype);
}

// Elementwise |a - b| <= atol + rtol * |b| (string tensors: equal strings), reporting the
// first mismatch.
inline ::testing::AssertionResult tensors_near(const Tensor& a, const Tensor& b, double atol = 1e-5,
                                               double rtol = 1e-5) {
  if (a.shape() != b.shape()) {
    return ::testing::AssertionFailure() << "shapes differ: " << a.shape().to_string() << " vs "
                                         << b.shape().to_string();
  }
  if (a.dtype() == kString || b.dtype() == kString) {  // strings: equal elements
    if (a.dtype() != b.dtype()) return ::testing::AssertionFailure() << "a string and a numeric tensor";
    for (int64_t i = 0; i < a.numel(); ++i) {
      if (a.string_at(i) != b.string_at(i)) {
        return ::testing::AssertionFailure() << "element " << i << ": " << bytes_literal(a.string_at(i)) << " vs "
                                             << bytes_literal(b.string_at(i));
      }
    }
    return ::testing::AssertionSuccess();
  }
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  for (size_t i = 0; i < va.size(); ++i) {
    const bool both_nan = std::isnan(va[i]) && std::isnan(vb[i]);
    if (!both_nan && !(std::abs(va[i] - vb[i]) <= atol + rtol * std::abs(vb[i]))) {
      return ::testing::AssertionFailure() << "element " << i << ": " << va[i] << " vs " << vb[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// Checks the tape's gradients of fn against central differences. The scalar whose
// gradient is taken is sum(fn(inputs) * w) with fixed random weights w, so every output
// element matters with a different weight. Inputs must be float32.
inline void expect_gradients_match(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                                   std::vector<Tensor> inputs, double eps = 1e-3, double atol = 2e-3,
                                   double rtol = 2e-2) {
  // The weighted sum is computed by hand (not with ops) so the check does not depend on
  // the ops it tests.
  Tensor weights;
  auto weighted_sum = [&](const Tensor& y) {
    if (!weights.defined()) weights = random_tensor(y.shape(), 977, 0.5, 1.5);
    const auto vy = y.to_vector<double>(), vw = weights.to_vector<double>();
    double s = 0;
    for (size_t i = 0; i < vy.size(); ++i) s += vy[i] * vw[i];
    return s;
  };

  std::vector<Tensor> analytic;
  {
    autograd::GradientTape tape;
    for (const Tensor& x : inputs) tape.watch(x);
    Tensor y = fn(inputs);
    weighted_sum(y);  // fixes the weights' shape
    analytic = tape.gradient(y, inputs, weights);
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    ASSERT_TRUE(analytic[k].defined()) << "input " << k << " got no gradient";
    ASSERT_EQ(analytic[k].shape(), inputs[k].shape()) << "input " << k;
    float* x = inputs[k].data<float>();
    const auto g = analytic[k].to_vector<double>();
    for (int64_t i = 0; i < inputs[k].numel(); ++i) {
      const float saved = x[i];
      x[i] = saved + static_cast<float>(eps);
      const double plus = weighted_sum(fn(inputs));
      x[i] = saved - static_cast<float>(eps);
      const double minus = weighted_sum(fn(inputs));
      x[i] = saved;
      const double numeric = (plus - minus) / (2 * eps);
      EXPECT_NEAR(g[i], numeric, atol + rtol * std::abs(numeric)) << "input " << k << " element " << i;
    }
  }
}

// Sets the global dtype policy for one test and puts float32 back after it.
class GlobalPolicy {
 public:
  explicit GlobalPolicy(const char* name) { mixed_precision::set_global_policy(name); }
  ~GlobalPolicy() { mixed_precision::set_global_policy("float32"); }
  GlobalPolicy(const GlobalPolicy&) = delete;
  GlobalPolicy& operator=(const GlobalPolicy&) = delete;
};

}  // namespace chorus::testing
