// Internal to chorus/metrics: the per-sample values a metric function produces, Keras's
// reduction of them with sample weights into a running total and count, and typed
// reads of tensor data. No ops and no tape: metrics read memory directly. Pure
// functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "chorus/core/tensor.h"

namespace chorus::metrics::internal {

// A metric function's output before reduction (Keras's `values`): one double per
// element of `shape`, row-major, e.g. (batch,) matches for an accuracy.
struct SampleValues {
  std::vector<double> values;
  Shape shape;
};

enum class Reduce { kMean, kSum };

// Keras's reduce_to_samplewise_values followed by Mean/Sum.update_state: values of rank
// >= 2 are reduced (mean or sum) over their trailing axes to the sample weight's rank;
// each sample adds weight * value to `total` and its weight to `count` (a weight of rank
// >= 2 is reduced the same way first). Without sample_weight every sample weighs 1, and
// a scalar value counts once. sample_weight (any numeric dtype) is first rank-aligned as
// Keras does ((batch, 1) against (batch,)); it must then broadcast to the leading axes
// of the values, else ShapeError
// "<name>: sample_weight shape (3,) does not match the values' shape (4,)".
void accumulate(const std::string& name, const SampleValues& values, const Tensor& sample_weight, Reduce reduce,
                double& total, double& count);

// Calls fn(const T* data) with T the element type of x (float, bfloat16, int32_t,
// int64_t or bool).
template <class Fn>
decltype(auto) visit_data(const Tensor& x, Fn&& fn) {
  return visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return fn(static_cast<const T*>(x.raw_data()));
  });
}

template <class T>
double as_double(T v) {
  return static_cast<double>(arithmetic_value(v));
}

// `value` rounded to `dtype` as Keras's convert_to_tensor(y_true, dtype=y_pred.dtype)
// would (float32 and bfloat16 round; integer dtypes leave it as is).
double round_to(DType dtype, double value);

// Throws ValueError "<name>: y_true is an undefined tensor" (or y_pred).
void check_defined(const std::string& name, const Tensor& y_true, const Tensor& y_pred);

// A top-k metric's k: throws ValueError "<name>: expected k >= 1, got 0".
void check_k(const std::string& name, int64_t k);

// x's shape without its last axis. REQUIRES: rank >= 1.
Shape batch_shape_of(const Shape& shape);

// The first index of each row's maximum along the last axis (a NaN counts as the
// maximum, the first NaN wins: NumPy's and ops::argmax's rule). x: (..., n), n >= 1.
std::vector<int64_t> row_argmax(const Tensor& x);

// Keras's in_top_k: 1 where row r's score at label[r] is among its k largest (fewer
// than k scores are strictly greater; a NaN score at the label counts as -inf), else 0.
// A label that is not an integer in [0, n) gives 0. scores: (rows, n) in memory.
std::vector<double> in_top_k(const std::vector<double>& labels, const Tensor& scores, int64_t k);

}  // namespace chorus::metrics::internal
