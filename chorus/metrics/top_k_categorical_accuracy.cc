#include "chorus/metrics/top_k_categorical_accuracy.h"

#include "chorus/metrics/accuracy_functions.h"

namespace chorus::metrics {

TopKCategoricalAccuracy::TopKCategoricalAccuracy(TopKCategoricalAccuracyOptions options)
    : MeanMetricWrapper(std::move(options.name)), k_(options.k) {
  internal::check_k(name(), k_);
}

internal::SampleValues TopKCategoricalAccuracy::values(const Tensor& y_true, const Tensor& y_pred) {
  return internal::top_k_categorical_accuracy_values(name(), y_true, y_pred, k_);
}

std::unique_ptr<Metric> TopKCategoricalAccuracy::clone() const {
  return std::make_unique<TopKCategoricalAccuracy>(TopKCategoricalAccuracyOptions{.k = k_, .name = name()});
}

nlohmann::json TopKCategoricalAccuracy::get_config() const { return {{"name", name()}, {"k", k_}}; }

nlohmann::json TopKCategoricalAccuracy::to_config() const {
  return {{"class_name", "TopKCategoricalAccuracy"}, {"config", get_config()}};
}

}  // namespace chorus::metrics
