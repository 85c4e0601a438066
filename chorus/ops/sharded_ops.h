// How ops run on tensors sharded over a model-parallel mesh (DESIGN.md §3, Megatron's
// rules): the redistributions between a sharded tensor and the whole tensor, each
// differentiable, and the generic rules that the ops call when an input is sharded. A
// rule computes on the blocks with no communication where the op allows it (an
// elementwise op on equally sharded operands, a matmul with a column-sharded kernel, a
// row gather from a table sharded by columns) and inserts the one collective it needs
// where not (a row-sharded kernel's partial sums are all-reduced); an op without a rule
// gathers its sharded inputs first. The rules of matmul, reshape, take and attention use
// their op on the blocks, so they sit beside it (matmul.cc, shape_ops.cc, gather.cc,
// attention.cc); this unit includes no op. Every device thread of a mesh runs the same
// ops in the same order, so the collectives match up. Outside a model-parallel step no
// tensor is sharded and none of this runs.
//
// The invariant that makes the gradients right: a tensor that is not sharded holds the
// same value on every device of an axis, and gets the same gradient on each. Where a
// rule uses such a tensor whole on every device to make a sharded result, its gradient
// comes back as per-device partial sums, which copy_to_axis all-reduces (Megatron's f);
// reduce_from_axis is its mirror image (Megatron's g).
#pragma once

#include <functional>
#include <utility>

#include "chorus/core/sharding.h"

namespace chorus::ops::sharded {

// Whether any of the tensors is sharded (for the ops' dispatch).
inline bool any(const Tensor& a) { return is_sharded(a); }
inline bool any(const Tensor& a, const Tensor& b) { return is_sharded(a) || is_sharded(b); }
inline bool any(const Tensor& a, const Tensor& b, const Tensor& c) { return any(a, b) || is_sharded(c); }

// The calling thread's mesh. Throws Error outside a model-parallel step (a sharded
// tensor used outside one).
MeshContext& mesh();
// A sharded tensor's sharding. REQUIRES: is_sharded(x).
inline const Sharding& sharding_of(const Tensor& x) { return *x.impl()->sharding; }
// The sharding of a result: `like`'s axis, along `dim` of a tensor of `global_shape`.
inline Sharding result_sharding(const Sharding& like, int dim, Shape global_shape) {
  return Sharding{like.axis, dim, std::move(global_shape)};
}

// --- Redistributions (differentiable) ---
// The whole tensor from its blocks (all-gather along the sharded dimension); `x` itself
// when it is not sharded. Gradient: this device's block of the whole gradient.
Tensor replicate(const Tensor& x);
// This device's block of a whole `x` split along `dim` over mesh `axis`. Gradient: the
// blocks' gradients gathered. Throws ShapeError when the dimension does not divide.
Tensor shard(const Tensor& x, int axis, int dim);
// The block of a sharded tensor as a plain tensor, and back; gradients pass through.
Tensor to_local(const Tensor& x);
Tensor from_local(const Tensor& block, const Sharding& sharding);
// Identity whose gradient is all-reduced over `axis` (Megatron's f).
Tensor copy_to_axis(const Tensor& x, int axis);
// The sum over `axis` of every device's `partial` (Megatron's g); gradient passes through.
Tensor reduce_from_axis(const Tensor& partial, int axis);

// --- Rules, called by the ops when an input is sharded ---
using Unary = std::function<Tensor(const Tensor&)>;
using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;
// An elementwise op: the result is sharded as its input.
Tensor elementwise(const Unary& op, const Tensor& x);
// A broadcasting elementwise op: equally sharded operands stay blocks; an operand that
// is whole is cut to the matching block, or used whole where it broadcasts along the
// sharded dimension. Differently sharded operands are gathered.
Tensor elementwise(const Binary& op, const Tensor& a, const Tensor& b);
// An op along `axis` of x (softmax): blockwise unless `axis` is the sharded dimension.
Tensor along_axis(const Unary& op, const Tensor& x, int axis);

}  // namespace chorus::ops::sharded
