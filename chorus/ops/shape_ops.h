// Ops that rearrange elements without computing on them (Keras `ops` names). reshape,
// expand_dims and squeeze return views sharing the input's storage; the others return
// fresh copies. Every op takes every dtype; float32 and bfloat16 inputs get gradients.
// Thread-safe: no shared state.
#pragma once

#include <vector>

#include "chorus/core/tensor.h"

namespace chorus::ops {

// New shape with the same number of elements; one dimension may be -1 (inferred).
// Throws ValueError for two -1s or another negative dimension, ShapeError when the
// element counts differ: "reshape: cannot reshape a tensor of shape (2, 3) (6 elements)
// into shape (4, -1)".
Tensor reshape(const Tensor& x, const std::vector<int64_t>& new_shape);
// Inserts a size-1 axis at `axis` in [-rank - 1, rank] (IndexError otherwise).
Tensor expand_dims(const Tensor& x, int axis);
// Removes every size-1 axis...
Tensor squeeze(const Tensor& x);
// ...or only `axis`, which must have size 1 (ShapeError otherwise).
Tensor squeeze(const Tensor& x, int axis);
// Permutes axes: axis d of the result is axis axes[d] of x (negative axes count from the
// end); reverses them when `axes` is empty. Throws ValueError unless axes is a permutation.
Tensor transpose(const Tensor& x, const std::vector<int>& axes = {});
// Joins tensors whose shapes agree except along `axis`. REQUIRES a non-empty list of
// tensors of rank >= 1 with one dtype (ValueError, ShapeError, DTypeError).
Tensor concatenate(const std::vector<Tensor>& xs, int axis = 0);
// Joins equal-shaped tensors along a new axis in [-rank - 1, rank].
Tensor stack(const std::vector<Tensor>& xs, int axis = 0);
// `sections` equal parts along `axis`, which must divide evenly (ValueError:
// "split: 3 sections do not divide axis 1 of size 7")...
std::vector<Tensor> split(const Tensor& x, int64_t sections, int axis = 0);
// ...or the parts between cut points, as NumPy's np.split with an index list: x[:i0],
// x[i0:i1], ..., x[ik:] along `axis`, where a negative index counts from the end and an
// index past the end is clamped. Unlike NumPy the (normalised) indices must not
// decrease: overlapping parts are rejected with ValueError.
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& indices, int axis = 0);
// The block starting at `start_indices` with extent `shape` (Keras ops.slice); a size of
// -1 means "to the end of the axis" (tf.slice). One start and one size per axis
// (ValueError); a block that does not fit throws IndexError naming the axis.
Tensor slice(const Tensor& x, const std::vector<int64_t>& start_indices, const std::vector<int64_t>& shape);
// A copy of x with the block at `start_indices` replaced by `updates` (Keras
// ops.slice_update). Same rank and dtype; the block must fit. The gradient of slice.
Tensor slice_update(const Tensor& x, const std::vector<int64_t>& start_indices, const Tensor& updates);

}  // namespace chorus::ops
