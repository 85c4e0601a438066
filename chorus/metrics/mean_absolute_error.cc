#include "chorus/metrics/mean_absolute_error.h"

#include <cmath>

#include "chorus/metrics/regression_functions.h"

namespace chorus::metrics {

internal::SampleValues MeanAbsoluteError::values(const Tensor& y_true, const Tensor& y_pred) {
  return internal::mean_error_values(name(), y_true, y_pred, [](double e) { return std::abs(e); });
}

}  // namespace chorus::metrics
