// MeanMetricWrapper: the base of the metrics that average a per-sample value of
// (y_true, y_pred) — accuracies, errors (Keras's MeanMetricWrapper). State: {total,
// count}; result() = total / count, or 0 before any sample. One instance per thread.
#pragma once

#include <string>

#include "chorus/metrics/metric.h"
#include "chorus/metrics/metric_util.h"

namespace chorus::metrics {

class MeanMetricWrapper : public Metric {
 public:
  explicit MeanMetricWrapper(std::string name) : Metric(std::move(name), 2) {}

  // Adds sum(sample_weight * value) and sum(sample_weight) over the batch (Keras's
  // reduction, see internal::accumulate); sample_weight (batch,) or undefined (all 1).
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) final;
  double result() const override;

 protected:
  // The per-sample values for one batch (e.g. 1/0 matches), checking the shapes.
  virtual internal::SampleValues values(const Tensor& y_true, const Tensor& y_pred) = 0;
};

}  // namespace chorus::metrics
