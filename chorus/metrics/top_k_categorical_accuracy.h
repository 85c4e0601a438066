// TopKCategoricalAccuracy: how often the one-hot label's class is among the k highest
// scores (keras.metrics.TopKCategoricalAccuracy, Keras's in_top_k: ties at the k-th
// score count as in). State: {total, count}. One instance per thread.
#pragma once

#include <string>

#include "chorus/metrics/mean_metric_wrapper.h"

namespace chorus::metrics {

// What the top-k accuracies share: an options struct with `k` (checked to be >= 1) and
// `name`, and the config {name, k}.
template <class Self, class Options>
class TopKAccuracyMetric : public MeanMetricWithOptions<Self, Options> {
 public:
  // Throws ValueError "<name>: expected k >= 1, got 0".
  explicit TopKAccuracyMetric(Options options = {}) : MeanMetricWithOptions<Self, Options>(std::move(options)) {
    internal::check_k(this->name(), k());
  }

  int64_t k() const { return this->options().k; }
  nlohmann::json get_config() const override { return {{"name", this->name()}, {"k", k()}}; }
};

struct TopKCategoricalAccuracyOptions {
  int64_t k = 5;  // must be >= 1
  std::string name = "top_k_categorical_accuracy";
};

class TopKCategoricalAccuracy final
    : public TopKAccuracyMetric<TopKCategoricalAccuracy, TopKCategoricalAccuracyOptions> {
 public:
  static constexpr const char* kClassName = "TopKCategoricalAccuracy";
  using TopKAccuracyMetric::TopKAccuracyMetric;

 protected:
  // y_true (one-hot) and y_pred of one shape (..., classes).
  internal::SampleValues values(const Tensor& y_true, const Tensor& y_pred) override;
};

}  // namespace chorus::metrics
