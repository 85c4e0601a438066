// Internal to chorus/ops: how a reduction over any set of axes runs as a few passes over
// (outer, reduced, inner) views, and float32 <-> bfloat16 staging for the kernels.
// Used by reduction.cc and softmax.cc. Plain values and pure functions; thread-safe.
#pragma once

#include <vector>

#include "chorus/core/tensor.h"

namespace chorus::ops::internal {

struct ReduceStep {
  int64_t outer = 1, reduced = 1, inner = 1;
};

struct ReducePlan {
  std::vector<int> axes;  // sorted, non-negative
  Shape kept;             // the input shape with the reduced axes set to 1
  Shape out;              // kept, or without the reduced axes when !keepdims
  int64_t count = 1;      // input elements reduced into each output element
  // Passes in order, each on the previous one's (outer, inner) result. Axes of size 1
  // are skipped and adjacent reduced axes merged, so {0, 1} of (4, 5, 6) is one pass
  // (1, 20, 6); non-adjacent groups take one pass each, innermost first. Empty when
  // nothing is reduced (every reduced axis has size 1).
  std::vector<ReduceStep> steps;
};

// REQUIRES: axes sorted, unique, in [0, shape.rank()).
ReducePlan plan_reduction(const Shape& shape, std::vector<int> axes, bool keepdims);

// x as float32: x itself when it is float32, else a converted copy. REQUIRES: floating x.
Tensor to_float32(const Tensor& x);
// A float32 tensor converted to `dtype` (float32: returned as is). REQUIRES: floating dtype.
Tensor from_float32(const Tensor& x, DType dtype);

// Throws DTypeError unless x is float32 or bfloat16:
// "softmax: expected a floating dtype (float32 or bfloat16), got int32".
void check_floating(const Tensor& x, const char* op);

}  // namespace chorus::ops::internal
