// IndexedSlices: a gradient that is zero outside some rows of its variable
// (tf.IndexedSlices), as a row gather (an Embedding lookup) gives its table. Row
// `indices[i]` of the dense gradient gets `values[i]`, and a row listed twice gets the
// sum. A value type of tensor handles; as thread-safe as the tensors it holds.
#pragma once

#include <span>

#include "chorus/core/tensor.h"

namespace chorus::autograd {

struct IndexedSlices {
  Tensor values;      // (n, row...) float32: dense_shape without its first axis, n times
  Tensor indices;     // (n,) int32 or int64, each in [0, dense_shape[0])
  Shape dense_shape;  // the variable's shape

  bool defined() const { return values.defined(); }
  // Elements in one row of the dense gradient (0 for a table without rows).
  int64_t row_width() const { return row_width(dense_shape); }
  static int64_t row_width(const Shape& dense_shape);
  // The shape of `n` rows of a gradient of `dense_shape`: (n,) + dense_shape[1:].
  static Shape rows_shape(const Shape& dense_shape, int64_t n);

  // The dense gradient: zeros, with the rows of `values` added at `indices` in position
  // order (the bits of the dense take gradient).
  Tensor to_dense() const;
  // Adds the rows into `dense`, a float32 tensor of dense_shape, in position order:
  // onto zeros, the bits of to_dense().
  void add_to(Tensor& dense) const;

  // All of `parts` (slices of one dense_shape) one after another: their sum. Indices
  // become int64 when the parts' index dtypes differ. REQUIRES: parts is not empty.
  static IndexedSlices concatenate(std::span<const IndexedSlices> parts);
};

}  // namespace chorus::autograd
