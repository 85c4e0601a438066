#include "chorus/metrics/categorical_accuracy.h"

#include "chorus/metrics/accuracy_functions.h"

namespace chorus::metrics {

CategoricalAccuracy::CategoricalAccuracy(CategoricalAccuracyOptions options)
    : MeanMetricWrapper(std::move(options.name)) {}

internal::SampleValues CategoricalAccuracy::values(const Tensor& y_true, const Tensor& y_pred) {
  return internal::categorical_accuracy_values(name(), y_true, y_pred);
}

std::unique_ptr<Metric> CategoricalAccuracy::clone() const {
  return std::make_unique<CategoricalAccuracy>(CategoricalAccuracyOptions{.name = name()});
}

nlohmann::json CategoricalAccuracy::get_config() const { return {{"name", name()}}; }

nlohmann::json CategoricalAccuracy::to_config() const {
  return {{"class_name", "CategoricalAccuracy"}, {"config", get_config()}};
}

}  // namespace chorus::metrics
