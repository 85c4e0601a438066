// SparseTopKCategoricalAccuracy: how often the integer label is among the k highest
// scores (keras.metrics.SparseTopKCategoricalAccuracy, Keras's in_top_k: ties at the
// k-th score count as in). State: {total, count}. One instance per thread.
#pragma once

#include <string>

#include "chorus/metrics/top_k_categorical_accuracy.h"

namespace chorus::metrics {

struct SparseTopKCategoricalAccuracyOptions {
  int64_t k = 5;  // must be >= 1
  std::string name = "sparse_top_k_categorical_accuracy";
};

class SparseTopKCategoricalAccuracy final
    : public TopKAccuracyMetric<SparseTopKCategoricalAccuracy, SparseTopKCategoricalAccuracyOptions> {
 public:
  static constexpr const char* kClassName = "SparseTopKCategoricalAccuracy";
  using TopKAccuracyMetric::TopKAccuracyMetric;

 protected:
  // y_true: labels of shape (batch,) or (batch, 1) for y_pred (batch, classes); a label
  // that is not a class index never matches.
  internal::SampleValues values(const Tensor& y_true, const Tensor& y_pred) override;
};

}  // namespace chorus::metrics
