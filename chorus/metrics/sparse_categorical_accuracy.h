// SparseCategoricalAccuracy: how often argmax(y_pred) equals the integer label
// (keras.metrics.SparseCategoricalAccuracy; ties pick the first maximum). State:
// {total, count}. One instance per thread.
#pragma once

#include <string>

#include "chorus/metrics/mean_metric_wrapper.h"

namespace chorus::metrics {

struct SparseCategoricalAccuracyOptions {
  std::string name = "sparse_categorical_accuracy";
};

class SparseCategoricalAccuracy final
    : public MeanMetricWithOptions<SparseCategoricalAccuracy, SparseCategoricalAccuracyOptions> {
 public:
  static constexpr const char* kClassName = "SparseCategoricalAccuracy";
  using MeanMetricWithOptions::MeanMetricWithOptions;

 protected:
  // y_true: labels (int32, int64 or float) of shape (batch,) or (batch, 1) for y_pred
  // (batch, classes); a label that is not a class index never matches. Throws ShapeError
  // "sparse_categorical_accuracy: expected y_true of shape (4,) or (4, 1) to match y_pred
  // of shape (4, 10), got (5,)".
  internal::SampleValues values(const Tensor& y_true, const Tensor& y_pred) override;
};

}  // namespace chorus::metrics
