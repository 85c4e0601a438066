// Ops that rearrange elements without computing on them (Keras `ops` names). reshape,
// expand_dims and squeeze return views sharing storage; the others copy. Thread-safe.
#pragma once

#include <vector>

#include "chorus/core/tensor.h"

namespace chorus::ops {

// New shape with the same number of elements; one dimension may be -1 (inferred).
Tensor reshape(const Tensor& x, const std::vector<int64_t>& new_shape);
Tensor expand_dims(const Tensor& x, int axis);
// Removes `axis` (which must have size 1), or every size-1 axis when axis is omitted.
Tensor squeeze(const Tensor& x);
Tensor squeeze(const Tensor& x, int axis);
// Permutes axes; reverses them when `axes` is empty.
Tensor transpose(const Tensor& x, const std::vector<int>& axes = {});
// Joins tensors whose shapes agree except along `axis`.
Tensor concatenate(const std::vector<Tensor>& xs, int axis = 0);
// Joins equal-shaped tensors along a new axis.
Tensor stack(const std::vector<Tensor>& xs, int axis = 0);
// `sections` equal parts along `axis` (which must divide evenly)...
std::vector<Tensor> split(const Tensor& x, int64_t sections, int axis = 0);
// ...or parts cut at the sorted `indices` (NumPy's array_split with indices).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& indices, int axis = 0);
// The block starting at `start_indices` with extent `shape` (Keras ops.slice).
Tensor slice(const Tensor& x, const std::vector<int64_t>& start_indices, const std::vector<int64_t>& shape);

}  // namespace chorus::ops
