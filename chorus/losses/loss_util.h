// Internal to chorus/losses (and the metrics that share Keras's shape rules): argument
// checks, Keras's rank alignment of y_true and y_pred, and the weighted reduction behind
// Loss::operator(). Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "chorus/core/config_reader.h"
#include "chorus/core/tensor.h"

namespace chorus::losses::internal {

// Keras's backend.epsilon(): probabilities are clipped to [kEpsilon, 1 - kEpsilon].
inline constexpr double kEpsilon = 1e-7;

// Keras's squeeze_or_expand_to_same_rank on shapes: when the ranks differ by one and the
// longer shape ends in 1, that 1 is squeezed, except that a rank-1 shorter shape gets a
// trailing 1 instead. Other pairs come back unchanged.
std::pair<Shape, Shape> squeeze_or_expand_shapes(const Shape& a, const Shape& b);
// The same on tensors, as differentiable reshapes.
std::pair<Tensor, Tensor> squeeze_or_expand_to_same_rank(const Tensor& a, const Tensor& b);

// Throws ValueError naming `owner` unless `reduction` is one Loss accepts.
void check_reduction(const std::string& owner, const std::string& reduction);
// A config's "reduction" (default "sum_over_batch_size"; null means "none", as Keras's
// None), checked.
std::string reduction_of(ConfigReader& reader);

// Throws ValueError "<name>: expected label_smoothing in [0, 1], got 1.5".
void check_label_smoothing(const std::string& name, double label_smoothing);

// Throws ValueError "<name>: y_true is an undefined tensor" (or y_pred).
void check_defined(const std::string& name, const Tensor& y_true, const Tensor& y_pred);

// x as float32 (a differentiable cast from bfloat16; integers and bool convert to numbers).
Tensor as_float32(const Tensor& x);

// y_true and y_pred for the losses that compare them elementwise (MSE, MAE, Huber, the
// crossentropies): both float32, rank-aligned as Keras does, then required to have
// equal shapes of rank >= 1. Throws ShapeError
// "mean_squared_error: y_true shape (64, 2) and y_pred shape (64, 3) do not match".
std::pair<Tensor, Tensor> aligned_pair(const std::string& name, const Tensor& y_true, const Tensor& y_pred);

// Keras's reduce_weighted_values: for "sum_over_batch_size" (and "mean"), the sum of
// losses * sample_weight divided by the number of loss elements (0 for no elements), as
// a float32 scalar; "sum" does not divide; "mean_with_sample_weight" divides by the sum
// of the weights (0 for a zero sum, as divide_no_nan); "none" returns the weighted values. An undefined sample_weight weighs every element 1. The weight is
// rank-aligned like Keras (squeeze_or_expand_shapes), then, if it still has fewer axes,
// matched to the leading axes of the losses (a (batch,) weight weighs each sample of
// (batch, T) losses); it must then broadcast to the losses' shape, else ShapeError
// "<name>: sample_weight shape (3,) does not broadcast to the per-sample losses' shape (4,)".
Tensor reduce_weighted(const std::string& name, const Tensor& losses, const Tensor& sample_weight,
                       const std::string& reduction = "sum_over_batch_size");

}  // namespace chorus::losses::internal
