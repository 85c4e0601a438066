// TopKCategoricalAccuracy: how often the one-hot label's class is among the k highest
// scores (keras.metrics.TopKCategoricalAccuracy, Keras's in_top_k: ties at the k-th
// score count as in). State: {total, count}. One instance per thread.
#pragma once

#include <string>

#include "chorus/metrics/mean_metric_wrapper.h"

namespace chorus::metrics {

struct TopKCategoricalAccuracyOptions {
  int64_t k = 5;  // must be >= 1
  std::string name = "top_k_categorical_accuracy";
};

class TopKCategoricalAccuracy : public MeanMetricWrapper {
 public:
  // Throws ValueError "top_k_categorical_accuracy: expected k >= 1, got 0".
  explicit TopKCategoricalAccuracy(TopKCategoricalAccuracyOptions options = {});

  int64_t k() const { return k_; }
  std::unique_ptr<Metric> clone() const override;
  nlohmann::json get_config() const override;
  nlohmann::json to_config() const override;

 protected:
  // y_true (one-hot) and y_pred of one shape (..., classes).
  internal::SampleValues values(const Tensor& y_true, const Tensor& y_pred) override;

 private:
  int64_t k_;
};

}  // namespace chorus::metrics
