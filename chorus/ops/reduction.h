// Reductions, softmax, and index ops (Keras `ops` names): sums and extrema over any axes
// with keepdims, argmax, logsumexp, softmax/log_softmax (max-subtracted, so stable),
// one_hot, take (gather) with its scatter-add gradient, top_k. Each returns fresh
// tensors and records its gradient when a tape is recording. Float results are the same
// bits for any thread count. Thread-safe: no shared state.
#pragma once

#include <utility>

#include "chorus/core/tensor.h"
#include "chorus/ops/axes.h"

namespace chorus::ops {

// Reductions over `axis` (default: every axis; negative axes count from the end).
// keepdims keeps the reduced axes with size 1. sum, max and min take float32, bfloat16
// (accumulated in float32), int32 and int64 (integer sums wrap around); mean takes the
// floating dtypes only. Float sums are pairwise (accurate for long rows); fewer than 64
// contiguous elements (e.g. sum(axis=-1) of (B, 32)) sum in a fixed 16-lane order (see
// backend/cpu/reduce_kernels_isa.h). Either way the bits are the same on every ISA and
// for any thread count. max/min return NaN for a slice holding one. An empty axis sums
// to 0 and means to NaN; max/min of an empty axis throw ValueError. Bad axes:
// IndexError (out of range), ValueError (repeated); bool input: DTypeError.
// Gradients: sum broadcasts g back; mean broadcasts g / count; max/min send g to the
// positions equal to the extreme, split evenly among ties (as TensorFlow does).
Tensor sum(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor mean(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor max(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor min(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
// Index (int64) of the first maximum along `axis`; a NaN counts as the maximum (the
// first NaN wins). Numeric dtypes. Not differentiable.
Tensor argmax(const Tensor& x, int axis = -1, bool keepdims = false);
// log(sum(exp(x))) over `axis`, shifted by the maximum so it never overflows. A slice
// of all -inf gives -inf (not NaN), an empty one -inf. Floating dtypes. Gradient:
// softmax(x) * g.
Tensor logsumexp(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
// exp(x - max) / sum(exp(x - max)) along `axis`, in one fused pass per row: inputs
// like 1000 do not overflow. A slice of all -inf, or holding +inf or NaN, gives NaN.
// Floating dtypes. Gradient: y * (g - sum(g * y, axis)).
Tensor softmax(const Tensor& x, int axis = -1);
// x - logsumexp(x) along `axis`, fused like softmax. Gradient: g - exp(y) * sum(g, axis).
Tensor log_softmax(const Tensor& x, int axis = -1);

// Integer indices (int32/int64, any shape) -> one-hot vectors of `dtype` along a new last
// axis. Negative and out-of-range indices give all-zero rows (as Keras and TF do).
// Throws ValueError for num_classes < 1, DTypeError for non-integer indices. Not
// differentiable.
Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype = kFloat32);
// Gathers slices of x (any dtype) along `axis` at integer `indices` (int32/int64, any
// shape, a scalar too): the result has shape x.shape[:axis] + indices.shape +
// x.shape[axis+1:]. Every index must be in [0, x.shape[axis]): negative indices are
// errors too, never wrapped. A bad index throws IndexError naming it, the range and its
// flat position: "take: index 2000 is out of range [0, 1683) at position 17".
// Gradient (to x only): a scatter-add of g into zeros like x; duplicate indices add up,
// in a fixed order.
Tensor take(const Tensor& x, const Tensor& indices, int axis = 0);
// The k largest entries along the last axis, and their int64 indices. sorted: descending
// values, ties broken by the lower index; !sorted: the same entries in ascending index
// order. A NaN counts as larger than any number. Throws ValueError unless 1 <= k <= the
// last dimension. Gradient flows to the values: g scattered back to the chosen positions.
std::pair<Tensor, Tensor> top_k(const Tensor& x, int64_t k, bool sorted = true);

// Sums a broadcast gradient back to `shape` (the reverse of broadcasting): leading axes
// are summed away and axes where `shape` has 1 are summed with keepdims. Used by the
// backward pass of every broadcasting op. Returns a fresh tensor (a view of x when the
// shapes already match). Throws ShapeError unless `shape` broadcasts to x.shape().
// Gradient: broadcast_to.
Tensor sum_to(const Tensor& x, const Shape& shape);
// Copies x (any dtype) into the larger shape it broadcasts to (NumPy rules), without
// arithmetic. Throws ShapeError: "broadcast_to: cannot broadcast shape (2, 3) to (4, 3)".
// Gradient: sum_to.
Tensor broadcast_to(const Tensor& x, const Shape& shape);

}  // namespace chorus::ops
