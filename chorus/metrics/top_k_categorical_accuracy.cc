#include "chorus/metrics/top_k_categorical_accuracy.h"

#include "chorus/metrics/accuracy_functions.h"

namespace chorus::metrics {

internal::SampleValues TopKCategoricalAccuracy::values(const Tensor& y_true, const Tensor& y_pred) {
  return internal::top_k_categorical_accuracy_values(name(), y_true, y_pred, k());
}

}  // namespace chorus::metrics
