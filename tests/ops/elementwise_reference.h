// Reference helpers for the elementwise op tests: random inputs of every dtype (also as
// offset views), plain broadcasting index arithmetic, and comparison against expected
// values computed in double with a tolerance that fits the dtype. Test threads only.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "chorus/core/creation.h"
#include "tests/testing/test_util.h"

namespace chorus::testing {

inline constexpr DType kNumericDTypes[] = {kFloat32, kBFloat16, kInt32, kInt64};
inline constexpr DType kFloatDTypes[] = {kFloat32, kBFloat16};
// Sizes that hit the vector loop's remainder, a single element, and the threaded path.
inline constexpr int64_t kSizes[] = {1, 7, 1023, 100003};

// Values in [lo, hi): uniform reals for floating dtypes (whole numbers if `whole`, to
// make ties), uniform integers for integer dtypes, true/false for bool.
inline Tensor random_of(const Shape& shape, uint64_t seed, DType dtype, double lo = -1, double hi = 1,
                        bool whole = false) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor out = Tensor::empty(shape, dtype);
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* data = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      double v = dist(gen);
      if (whole || is_integer(dtype)) v = std::floor(v);
      if constexpr (std::is_same_v<T, bfloat16>) {
        data[i] = bfloat16(static_cast<float>(v));
      } else if constexpr (std::is_same_v<T, bool>) {
        data[i] = v > (lo + hi) / 2;
      } else if constexpr (std::is_same_v<T, uint8_t>) {
        data[i] = static_cast<uint8_t>(std::clamp(std::floor(v), 0.0, 255.0));  // whole bytes within [lo, hi]
      } else {
        data[i] = static_cast<T>(v);
      }
    }
  });
  return out;
}

// The same values as a view at an element offset into a larger tensor (rows 1..n of n+2),
// so kernels see unaligned, non-zero-offset data.
inline Tensor random_view(const Shape& shape, uint64_t seed, DType dtype, double lo = -1, double hi = 1,
                          bool whole = false) {
  Shape bigger = shape;
  if (bigger.rank() == 0) bigger = Shape{1};
  const int64_t rows = bigger[0];
  bigger[0] = rows + 2;
  Tensor view = random_of(bigger, seed, dtype, lo, hi, whole).first_axis_slice(1, rows + 1);
  return shape.rank() == 0 ? view.view(shape) : view;
}

// The flat index into a tensor of shape `in` that element `flat` of the broadcast shape
// `out` reads (NumPy rules: right-aligned, size-1 axes repeat).
inline int64_t broadcast_source(int64_t flat, const Shape& out, const Shape& in) {
  int64_t source = 0, stride = 1;
  for (int d = out.rank() - 1, k = in.rank() - 1; d >= 0; --d, --k) {
    const int64_t i = flat % out[d];
    flat /= out[d];
    if (k >= 0) {
      if (in[k] != 1) source += i * stride;
      stride *= in[k];
    }
  }
  return source;
}

// f(a, b) per element of the broadcast shape, in double.
template <class F>
std::vector<double> reference_binary(const Tensor& a, const Tensor& b, F f) {
  const Shape out = broadcast_shapes(a.shape(), b.shape(), "reference");
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  std::vector<double> result(static_cast<size_t>(out.numel()));
  for (int64_t i = 0; i < out.numel(); ++i) {
    result[i] = f(va[broadcast_source(i, out, a.shape())], vb[broadcast_source(i, out, b.shape())]);
  }
  return result;
}

template <class F>
std::vector<double> reference_unary(const Tensor& x, F f) {
  auto values = x.to_vector<double>();
  for (double& v : values) v = f(v);
  return values;
}

// Compares `actual` with `expected` (double): exact for integers and bool, within float
// rounding for float32 (rtol/atol given), within one bfloat16 rounding for bfloat16.
inline ::testing::AssertionResult values_match(const Tensor& actual, const std::vector<double>& expected,
                                               double rtol = 2e-6, double atol = 1e-7) {
  if (actual.numel() != static_cast<int64_t>(expected.size())) {
    return ::testing::AssertionFailure() << "got " << actual.numel() << " elements, expected " << expected.size();
  }
  if (actual.dtype() == kBFloat16) {
    rtol = std::max(rtol, 1.0 / 128);
    atol = std::max(atol, 1e-6);
  }
  const bool exact = !is_floating(actual.dtype());
  const auto got = actual.to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i) {
    const double want = expected[i];
    if (std::isnan(want) && std::isnan(got[i])) continue;
    const bool ok = exact ? got[i] == want
                          : (got[i] == want || std::abs(got[i] - want) <= atol + rtol * std::abs(want));
    if (!ok) {
      return ::testing::AssertionFailure() << dtype_name(actual.dtype()) << " element " << i << " of "
                                           << got.size() << ": got " << got[i] << ", expected " << want;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace chorus::testing
