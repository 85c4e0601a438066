#include "chorus/metrics/mean_absolute_error.h"

#include <cmath>

#include "chorus/metrics/regression_functions.h"

namespace chorus::metrics {

MeanAbsoluteError::MeanAbsoluteError(MeanAbsoluteErrorOptions options) : MeanMetricWrapper(std::move(options.name)) {}

internal::SampleValues MeanAbsoluteError::values(const Tensor& y_true, const Tensor& y_pred) {
  return internal::mean_error_values(name(), y_true, y_pred, [](double e) { return std::abs(e); });
}

std::unique_ptr<Metric> MeanAbsoluteError::clone() const {
  return std::make_unique<MeanAbsoluteError>(MeanAbsoluteErrorOptions{name()});
}

nlohmann::json MeanAbsoluteError::to_config() const {
  return {{"class_name", "MeanAbsoluteError"}, {"config", get_config()}};
}

}  // namespace chorus::metrics
