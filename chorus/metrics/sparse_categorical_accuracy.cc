#include "chorus/metrics/sparse_categorical_accuracy.h"

#include "chorus/metrics/accuracy_functions.h"

namespace chorus::metrics {

internal::SampleValues SparseCategoricalAccuracy::values(const Tensor& y_true, const Tensor& y_pred) {
  return internal::sparse_categorical_accuracy_values(name(), y_true, y_pred);
}

}  // namespace chorus::metrics
