// Reductions, softmax, and index ops (Keras `ops` names): sums and extrema over any axes
// with keepdims, argmax, logsumexp, softmax/log_softmax (max-subtracted, so stable),
// one_hot, take (gather) with its scatter-add gradient, top_k. Thread-safe.
#pragma once

#include <utility>

#include "chorus/core/tensor.h"
#include "chorus/ops/axes.h"

namespace chorus::ops {

Tensor sum(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor mean(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor max(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor min(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
// Index (int64) of the first maximum along `axis`. Not differentiable.
Tensor argmax(const Tensor& x, int axis = -1, bool keepdims = false);
Tensor logsumexp(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor softmax(const Tensor& x, int axis = -1);
Tensor log_softmax(const Tensor& x, int axis = -1);

// Integer indices -> one-hot vectors along a new last axis. Out-of-range indices give
// all-zero rows (as Keras and TF do).
Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype = kFloat32);
// Gathers slices of x along `axis` at integer `indices` (any shape): the result has
// shape x.shape[:axis] + indices.shape + x.shape[axis+1:]. An index outside
// [0, x.shape[axis]) throws IndexError naming it and its position. Gradient: scatter-add.
Tensor take(const Tensor& x, const Tensor& indices, int axis = 0);
// The k largest entries along the last axis, and their int64 indices; sorted
// descending, ties broken by the lower index. Gradient flows to the values.
std::pair<Tensor, Tensor> top_k(const Tensor& x, int64_t k, bool sorted = true);

// Sums a broadcast gradient back to `shape` (the reverse of broadcasting): used by the
// backward pass of every broadcasting op. REQUIRES: `shape` broadcasts to x.shape().
Tensor sum_to(const Tensor& x, const Shape& shape);
// Copies x into a (larger) broadcast-compatible shape. Differentiable.
Tensor broadcast_to(const Tensor& x, const Shape& shape);

}  // namespace chorus::ops
