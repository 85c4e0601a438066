#include "chorus/metrics/sparse_top_k_categorical_accuracy.h"

#include "chorus/metrics/accuracy_functions.h"

namespace chorus::metrics {

SparseTopKCategoricalAccuracy::SparseTopKCategoricalAccuracy(SparseTopKCategoricalAccuracyOptions options)
    : MeanMetricWrapper(std::move(options.name)), k_(options.k) {
  internal::check_k(name(), k_);
}

internal::SampleValues SparseTopKCategoricalAccuracy::values(const Tensor& y_true, const Tensor& y_pred) {
  return internal::sparse_top_k_categorical_accuracy_values(name(), y_true, y_pred, k_);
}

std::unique_ptr<Metric> SparseTopKCategoricalAccuracy::clone() const {
  return std::make_unique<SparseTopKCategoricalAccuracy>(SparseTopKCategoricalAccuracyOptions{.k = k_, .name = name()});
}

nlohmann::json SparseTopKCategoricalAccuracy::get_config() const { return {{"name", name()}, {"k", k_}}; }

nlohmann::json SparseTopKCategoricalAccuracy::to_config() const {
  return {{"class_name", "SparseTopKCategoricalAccuracy"}, {"config", get_config()}};
}

}  // namespace chorus::metrics
