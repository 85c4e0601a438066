#include "chorus/metrics/binary_accuracy.h"

#include "chorus/metrics/accuracy_functions.h"

namespace chorus::metrics {

internal::SampleValues BinaryAccuracy::values(const Tensor& y_true, const Tensor& y_pred) {
  return internal::binary_accuracy_values(name(), y_true, y_pred, threshold());
}

nlohmann::json BinaryAccuracy::get_config() const { return {{"name", name()}, {"threshold", threshold()}}; }

}  // namespace chorus::metrics
