#include "chorus/metrics/sparse_categorical_accuracy.h"

#include "chorus/metrics/accuracy_functions.h"

namespace chorus::metrics {

SparseCategoricalAccuracy::SparseCategoricalAccuracy(SparseCategoricalAccuracyOptions options)
    : MeanMetricWrapper(std::move(options.name)) {}

internal::SampleValues SparseCategoricalAccuracy::values(const Tensor& y_true, const Tensor& y_pred) {
  return internal::sparse_categorical_accuracy_values(name(), y_true, y_pred);
}

std::unique_ptr<Metric> SparseCategoricalAccuracy::clone() const {
  return std::make_unique<SparseCategoricalAccuracy>(SparseCategoricalAccuracyOptions{.name = name()});
}

nlohmann::json SparseCategoricalAccuracy::get_config() const { return {{"name", name()}}; }

nlohmann::json SparseCategoricalAccuracy::to_config() const {
  return {{"class_name", "SparseCategoricalAccuracy"}, {"config", get_config()}};
}

}  // namespace chorus::metrics
