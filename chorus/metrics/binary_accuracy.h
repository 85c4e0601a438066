// BinaryAccuracy: how often y_pred > threshold agrees with 0/1 labels
// (keras.metrics.BinaryAccuracy). State: {total, count}. One instance per thread.
#pragma once

#include <string>

#include "chorus/metrics/mean_metric_wrapper.h"

namespace chorus::metrics {

struct BinaryAccuracyOptions {
  // A prediction above it means 1.
  double threshold = 0.5;
  std::string name = "binary_accuracy";
};

class BinaryAccuracy final : public MeanMetricWithOptions<BinaryAccuracy, BinaryAccuracyOptions> {
 public:
  static constexpr const char* kClassName = "BinaryAccuracy";
  using MeanMetricWithOptions::MeanMetricWithOptions;

  double threshold() const { return options().threshold; }
  nlohmann::json get_config() const override;

 protected:
  // y_true (0/1 labels) and y_pred of one shape after Keras's rank alignment, e.g.
  // (batch,) and (batch, 1). Throws ShapeError "binary_accuracy: y_true shape (4,) and
  // y_pred shape (5,) do not match".
  internal::SampleValues values(const Tensor& y_true, const Tensor& y_pred) override;
};

}  // namespace chorus::metrics
