#include "chorus/metrics/mean_squared_error.h"

#include "chorus/metrics/regression_functions.h"

namespace chorus::metrics {

internal::SampleValues MeanSquaredError::values(const Tensor& y_true, const Tensor& y_pred) {
  return internal::mean_error_values(name(), y_true, y_pred, [](double e) { return e * e; });
}

}  // namespace chorus::metrics
