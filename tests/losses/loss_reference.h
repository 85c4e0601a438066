// Plain double-precision reference implementations of the Keras losses, written as
// loops for the loss tests to compare against. Header-only; test threads only.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "chorus/core/creation.h"
#include "chorus/core/tensor.h"
#include "tests/testing/test_util.h"

namespace chorus::testing {

inline constexpr double kKerasEpsilon = 1e-7;

// Keras clips probabilities to [eps, 1 - eps] in the prediction's dtype (float32).
inline double clip_probability(double p) {
  return std::clamp(p, static_cast<double>(static_cast<float>(kKerasEpsilon)),
                    static_cast<double>(static_cast<float>(1 - kKerasEpsilon)));
}

// Per-row reduction over the last axis of (rows, d) data: f(t, p) summed, then divided
// by d when `mean`.
template <class F>
std::vector<double> per_row(const std::vector<double>& t, const std::vector<double>& p, int64_t d, bool mean, F f) {
  const int64_t rows = static_cast<int64_t>(p.size()) / d;
  std::vector<double> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < d; ++c) s += f(t[static_cast<size_t>(r * d + c)], p[static_cast<size_t>(r * d + c)]);
    out[static_cast<size_t>(r)] = mean ? s / static_cast<double>(d) : s;
  }
  return out;
}

// Numerically stable log(sum(exp(row))).
inline double log_sum_exp(const double* row, int64_t n) {
  double m = -INFINITY, s = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, row[i]);
  for (int64_t i = 0; i < n; ++i) s += std::exp(row[i] - m);
  return m + std::log(s);
}

inline double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

}  // namespace chorus::testing
