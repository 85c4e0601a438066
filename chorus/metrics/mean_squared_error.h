// MeanSquaredError (metric): the running mean over samples of mean((y_true - y_pred)^2)
// along the last axis (keras.metrics.MeanSquaredError, "mse"). State: {total, count}.
// One instance per thread.
#pragma once

#include <string>

#include "chorus/metrics/mean_metric_wrapper.h"

namespace chorus::metrics {

struct MeanSquaredErrorOptions {
  std::string name = "mean_squared_error";
};

class MeanSquaredError final : public MeanMetricWithOptions<MeanSquaredError, MeanSquaredErrorOptions> {
 public:
  static constexpr const char* kClassName = "MeanSquaredError";
  using MeanMetricWithOptions::MeanMetricWithOptions;

 protected:
  // y_true, y_pred: one shape (batch, ..., d) after Keras's rank alignment, computed in
  // double. Throws ShapeError "mean_squared_error: y_true shape (4, 2) and y_pred shape
  // (4, 3) do not match".
  internal::SampleValues values(const Tensor& y_true, const Tensor& y_pred) override;
};

}  // namespace chorus::metrics
