#include "chorus/metrics/mean_squared_error.h"

#include "chorus/metrics/regression_functions.h"

namespace chorus::metrics {

MeanSquaredError::MeanSquaredError(MeanSquaredErrorOptions options) : MeanMetricWrapper(std::move(options.name)) {}

internal::SampleValues MeanSquaredError::values(const Tensor& y_true, const Tensor& y_pred) {
  return internal::mean_error_values(name(), y_true, y_pred, [](double e) { return e * e; });
}

std::unique_ptr<Metric> MeanSquaredError::clone() const {
  return std::make_unique<MeanSquaredError>(MeanSquaredErrorOptions{name()});
}

nlohmann::json MeanSquaredError::to_config() const {
  return {{"class_name", "MeanSquaredError"}, {"config", get_config()}};
}

}  // namespace chorus::metrics
