// Elementwise ops with NumPy broadcasting (Keras `ops` names). Each checks dtypes and
// shapes, runs a vectorised kernel, and records its gradient when a tape is recording.
// Binary ops require equal dtypes (no implicit promotion: cast first); floating ops
// accept float32 and bfloat16 (bfloat16 computes in float32 and rounds the result).
// Thread-safe: no shared state.
#pragma once

#include "chorus/core/tensor.h"

namespace chorus::ops {

// Binary arithmetic. Numeric dtypes (float32, bfloat16, int32, int64).
Tensor add(const Tensor& a, const Tensor& b);
Tensor subtract(const Tensor& a, const Tensor& b);
Tensor multiply(const Tensor& a, const Tensor& b);
// Integer division truncates toward zero; division by an integer zero throws ValueError.
Tensor divide(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// Floating only.
Tensor power(const Tensor& a, const Tensor& b);

// Comparisons: bool results, not differentiable.
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);

// Unary. negative and abs take any numeric dtype, the rest floating only.
Tensor negative(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor square(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor relu(const Tensor& x);
// approximate=true: the tanh form (Keras's default); false: the exact erf form.
Tensor gelu(const Tensor& x, bool approximate = true);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor softplus(const Tensor& x);

// Clamps to [min_value, max_value]; the gradient passes where min <= x <= max.
Tensor clip(const Tensor& x, double min_value, double max_value);
// Picks x where condition (bool) is true, y elsewhere; all three broadcast together.
Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y);
// Converts to `dtype` (floats to ints truncate toward zero; to bool is x != 0).
// Differentiable between floating dtypes.
Tensor cast(const Tensor& x, DType dtype);

}  // namespace chorus::ops
