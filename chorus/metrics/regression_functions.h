// Internal to chorus/metrics: the per-sample regression errors behind the
// MeanSquaredError and MeanAbsoluteError metrics, read straight from tensor memory.
// Thread-safe.
#pragma once

#include <string>

#include "chorus/losses/loss_util.h"
#include "chorus/metrics/metric_util.h"

namespace chorus::metrics::internal {

// mean(f(y_true - y_pred)) along the last axis, in double, after Keras's rank alignment;
// y_true and y_pred must then have one shape of rank >= 1.
template <class F>
SampleValues mean_error_values(const std::string& name, const Tensor& y_true, const Tensor& y_pred, F f) {
  check_defined(name, y_true, y_pred);
  const auto [ts, ps] = losses::internal::squeeze_or_expand_shapes(y_true.shape(), y_pred.shape());
  if (ts != ps || ps.rank() == 0) {
    throw_error<ShapeError>("{}: y_true shape {} and y_pred shape {} do not match", name, y_true.shape().to_string(),
                            y_pred.shape().to_string());
  }
  const std::vector<double> t = y_true.to_vector<double>(), p = y_pred.to_vector<double>();
  const Shape batch = batch_shape_of(ps);
  const int64_t d = ps.dim(-1), rows = batch.numel();
  SampleValues out{std::vector<double>(static_cast<size_t>(rows)), batch};
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = r * d; c < (r + 1) * d; ++c) sum += f(t[static_cast<size_t>(c)] - p[static_cast<size_t>(c)]);
    out.values[static_cast<size_t>(r)] = sum / static_cast<double>(d);  // NaN for d = 0, as Keras's mean
  }
  return out;
}

}  // namespace chorus::metrics::internal
