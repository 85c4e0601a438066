// Plain double-precision reference loops for the reduction and softmax tests: no
// vectors, no threads, no tricks, so a disagreement points at the kernels. Test-only.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "chorus/core/creation.h"
#include "chorus/core/tensor.h"

namespace chorus::testing {

enum class Ref { kSum, kMean, kMax, kMin, kLogSumExp, kArgMax };

inline double reference_of(Ref kind, const std::vector<double>& v) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const bool any_nan = std::any_of(v.begin(), v.end(), [](double a) { return std::isnan(a); });
  switch (kind) {
    case Ref::kSum:
    case Ref::kMean: {
      double s = 0;
      for (double a : v) s += a;
      return kind == Ref::kSum ? s : s / static_cast<double>(v.size());
    }
    case Ref::kMax: return any_nan ? nan : *std::max_element(v.begin(), v.end());
    case Ref::kMin: return any_nan ? nan : *std::min_element(v.begin(), v.end());
    case Ref::kLogSumExp: {
      if (any_nan) return nan;
      const double m = *std::max_element(v.begin(), v.end());
      if (std::isinf(m)) return m;
      double s = 0;
      for (double a : v) s += std::exp(a - m);
      return m + std::log(s);
    }
    case Ref::kArgMax: {
      size_t best = 0;
      for (size_t i = 1; i < v.size(); ++i) {
        if (std::isnan(v[best])) break;
        if (std::isnan(v[i]) || v[i] > v[best]) best = i;
      }
      return static_cast<double>(best);
    }
  }
  return nan;
}

// x reduced over `axes` (sorted, non-negative) in double precision, as a float32 tensor
// shaped like the op's result.
inline Tensor reference_reduce(const Tensor& x, const std::vector<int>& axes, Ref kind, bool keepdims) {
  const Shape& shape = x.shape();
  Shape kept = shape, out;
  for (int a : axes) kept[a] = 1;
  for (int d = 0; d < shape.rank(); ++d) {
    if (keepdims || std::find(axes.begin(), axes.end(), d) == axes.end()) out.push_back(kept[d]);
  }
  const auto values = x.to_vector<double>();
  const auto kept_strides = contiguous_strides(kept);
  std::vector<std::vector<double>> groups(static_cast<size_t>(kept.numel()));
  std::vector<int64_t> index(static_cast<size_t>(shape.rank()), 0);
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t k = 0;
    for (int d = 0; d < shape.rank(); ++d) k += (kept[d] == 1 ? 0 : index[d]) * kept_strides[d];
    groups[static_cast<size_t>(k)].push_back(values[i]);
    for (int d = shape.rank() - 1; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  std::vector<float> result;
  for (const auto& g : groups) result.push_back(static_cast<float>(reference_of(kind, g)));
  return from_values(result, out);
}

}  // namespace chorus::testing
