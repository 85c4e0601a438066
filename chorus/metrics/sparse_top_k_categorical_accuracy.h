// SparseTopKCategoricalAccuracy: how often the integer label is among the k highest
// scores (keras.metrics.SparseTopKCategoricalAccuracy, Keras's in_top_k: ties at the
// k-th score count as in). State: {total, count}. One instance per thread.
#pragma once

#include <string>

#include "chorus/metrics/mean_metric_wrapper.h"

namespace chorus::metrics {

struct SparseTopKCategoricalAccuracyOptions {
  int64_t k = 5;  // must be >= 1
  std::string name = "sparse_top_k_categorical_accuracy";
};

class SparseTopKCategoricalAccuracy : public MeanMetricWrapper {
 public:
  // Throws ValueError "sparse_top_k_categorical_accuracy: expected k >= 1, got 0".
  explicit SparseTopKCategoricalAccuracy(SparseTopKCategoricalAccuracyOptions options = {});

  int64_t k() const { return k_; }
  std::unique_ptr<Metric> clone() const override;
  nlohmann::json get_config() const override;
  nlohmann::json to_config() const override;

 protected:
  // y_true: labels of shape (batch,) or (batch, 1) for y_pred (batch, classes); a label
  // that is not a class index never matches.
  internal::SampleValues values(const Tensor& y_true, const Tensor& y_pred) override;

 private:
  int64_t k_;
};

}  // namespace chorus::metrics
