#include "chorus/metrics/binary_accuracy.h"

#include "chorus/metrics/accuracy_functions.h"

namespace chorus::metrics {

BinaryAccuracy::BinaryAccuracy(BinaryAccuracyOptions options)
    : MeanMetricWrapper(std::move(options.name)), threshold_(options.threshold) {}

internal::SampleValues BinaryAccuracy::values(const Tensor& y_true, const Tensor& y_pred) {
  return internal::binary_accuracy_values(name(), y_true, y_pred, threshold_);
}

std::unique_ptr<Metric> BinaryAccuracy::clone() const {
  return std::make_unique<BinaryAccuracy>(BinaryAccuracyOptions{.threshold = threshold_, .name = name()});
}

nlohmann::json BinaryAccuracy::get_config() const { return {{"name", name()}, {"threshold", threshold_}}; }

nlohmann::json BinaryAccuracy::to_config() const {
  return {{"class_name", "BinaryAccuracy"}, {"config", get_config()}};
}

}  // namespace chorus::metrics
