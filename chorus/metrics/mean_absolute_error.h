// MeanAbsoluteError (metric): the running mean over samples of mean(|y_true - y_pred|)
// along the last axis (keras.metrics.MeanAbsoluteError, "mae"). State: {total, count}.
// One instance per thread.
#pragma once

#include <string>

#include "chorus/metrics/mean_metric_wrapper.h"

namespace chorus::metrics {

struct MeanAbsoluteErrorOptions {
  std::string name = "mean_absolute_error";
};

class MeanAbsoluteError final : public MeanMetricWithOptions<MeanAbsoluteError, MeanAbsoluteErrorOptions> {
 public:
  static constexpr const char* kClassName = "MeanAbsoluteError";
  using MeanMetricWithOptions::MeanMetricWithOptions;

 protected:
  // y_true, y_pred: one shape (batch, ..., d) after Keras's rank alignment, computed in
  // double. Throws ShapeError "mean_absolute_error: y_true shape (4, 2) and y_pred shape
  // (4, 3) do not match".
  internal::SampleValues values(const Tensor& y_true, const Tensor& y_pred) override;
};

}  // namespace chorus::metrics
