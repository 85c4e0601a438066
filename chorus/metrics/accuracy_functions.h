// Internal to chorus/metrics: Keras's accuracy metric functions (keras.metrics.accuracy,
// binary_accuracy, categorical_accuracy, ...), each giving 1 or 0 per sample for the
// mean-metric classes to accumulate. They read tensor memory directly (float32,
// bfloat16, int32, int64 or bool; no tape). Errors name the metric. Thread-safe.
#pragma once

#include <string>

#include "chorus/metrics/metric_util.h"

namespace chorus::metrics::internal {

// Exact equality of y_true (rounded to y_pred's dtype) and y_pred, elementwise, after
// Keras's rank alignment. Throws ShapeError
// "accuracy: y_true shape (4,) and y_pred shape (5,) do not match".
SampleValues accuracy_values(const std::string& name, const Tensor& y_true, const Tensor& y_pred);

// y_true == (y_pred > threshold ? 1 : 0), elementwise, after rank alignment.
SampleValues binary_accuracy_values(const std::string& name, const Tensor& y_true, const Tensor& y_pred,
                                    double threshold);

// argmax(y_true) == argmax(y_pred) along the last axis; y_true and y_pred of one shape
// (..., classes). Gives shape (...).
SampleValues categorical_accuracy_values(const std::string& name, const Tensor& y_true, const Tensor& y_pred);

// y_true == argmax(y_pred) along the last axis. y_true: y_pred.shape[:-1], or that with a
// trailing 1; labels of any dtype (a label that is not a class index never matches).
// Throws ShapeError "sparse_categorical_accuracy: expected y_true of shape (4,) or (4, 1)
// to match y_pred of shape (4, 10), got (5,)".
SampleValues sparse_categorical_accuracy_values(const std::string& name, const Tensor& y_true, const Tensor& y_pred);

// in_top_k(argmax(y_true), y_pred, k): one-hot y_true of y_pred's shape.
SampleValues top_k_categorical_accuracy_values(const std::string& name, const Tensor& y_true, const Tensor& y_pred,
                                               int64_t k);

// in_top_k(y_true, y_pred, k): labels shaped as for sparse_categorical_accuracy_values.
SampleValues sparse_top_k_categorical_accuracy_values(const std::string& name, const Tensor& y_true,
                                                      const Tensor& y_pred, int64_t k);

}  // namespace chorus::metrics::internal
