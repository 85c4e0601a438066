// CategoricalAccuracy: how often argmax(y_pred) equals argmax of one-hot labels
// (keras.metrics.CategoricalAccuracy; ties pick the first maximum). State: {total,
// count}. One instance per thread.
#pragma once

#include <string>

#include "chorus/metrics/mean_metric_wrapper.h"

namespace chorus::metrics {

struct CategoricalAccuracyOptions {
  std::string name = "categorical_accuracy";
};

class CategoricalAccuracy final : public MeanMetricWithOptions<CategoricalAccuracy, CategoricalAccuracyOptions> {
 public:
  static constexpr const char* kClassName = "CategoricalAccuracy";
  using MeanMetricWithOptions::MeanMetricWithOptions;

 protected:
  // y_true (one-hot) and y_pred of one shape (..., classes). Throws ShapeError
  // "categorical_accuracy: y_true shape (4, 3) and y_pred shape (4, 5) do not match".
  internal::SampleValues values(const Tensor& y_true, const Tensor& y_pred) override;
};

}  // namespace chorus::metrics
