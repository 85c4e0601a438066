// Elementwise ops with NumPy broadcasting (Keras `ops` names). Each checks dtypes and
// shapes, runs a vectorised kernel, and records its gradient when a tape is recording.
// Binary ops require equal dtypes (no implicit promotion: cast first); floating ops
// accept float32 and bfloat16 (bfloat16 computes in float32 and rounds the result).
// Thread-safe: no shared state.
#pragma once

#include "chorus/core/tensor.h"

namespace chorus::ops {

// Every op throws ValueError for an undefined argument, DTypeError when a dtype is not
// accepted ("exp: expected a floating dtype (float32 or bfloat16), got int32") or two
// dtypes differ ("add: dtypes differ: float32 and int32"), and ShapeError when shapes do not
// broadcast ("add: shapes (2, 3) and (4,) do not broadcast"). Integer and bool results are
// not differentiable.

// Binary arithmetic. Numeric dtypes (float32, bfloat16, int32, int64); integer + - * wrap
// around on overflow.
Tensor add(const Tensor& a, const Tensor& b);
Tensor subtract(const Tensor& a, const Tensor& b);
Tensor multiply(const Tensor& a, const Tensor& b);
// Integer division truncates toward zero; division by an integer zero throws ValueError
// ("divide: integer division by zero").
Tensor divide(const Tensor& a, const Tensor& b);
// NaN propagates. Gradient: to a where a >= b (resp. a <= b for minimum), to b elsewhere,
// so ties send the whole gradient to a (as TensorFlow does).
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// a^b, floating only (std::pow semantics, computed per element in double). Gradient:
// d/da = b a^(b-1); d/db = a^b log(a) where a > 0 and 0 elsewhere.
Tensor power(const Tensor& a, const Tensor& b);

// Comparisons: bool results, not differentiable. Numeric dtypes; equal and not_equal
// also take bool.
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);

// Unary. negative, abs, square and relu take any numeric dtype, the rest floating only.
// Transcendentals are vectorised approximations of the std:: functions: exp and log
// within 1 float ulp, tanh, sigmoid, softplus within 3 ulp, exact GELU within 6 ulp; the
// tanh GELU within 8e-7 relative for x >= -3 (its far negative tail, where it is below
// 1e-7, trades accuracy for speed: 6e-6 at x = -9). Special values follow IEEE: exp
// overflows to inf (x > 88.72) and flushes to 0 below 2^-125, log(0) = -inf,
// log(x < 0) = nan, sigmoid and tanh saturate, softplus(x) = x for large x, NaN in gives
// NaN out.
Tensor negative(const Tensor& x);
// Gradient sign(x): 0 at 0.
Tensor abs(const Tensor& x);
Tensor square(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
// NaN passes through. Gradient 1 where x > 0, else 0 (so relu'(0) = 0).
Tensor relu(const Tensor& x);
// approximate=true: the tanh form (Keras's default); false: the exact erf form.
Tensor gelu(const Tensor& x, bool approximate = true);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor softplus(const Tensor& x);

// Clamps to [min_value, max_value] (numeric dtypes; integers clip to the integers inside
// the bounds). The gradient passes where min <= x <= max. ValueError if min > max.
Tensor clip(const Tensor& x, double min_value, double max_value);
// Picks x where condition is true, y elsewhere; all three broadcast together. condition
// must be bool (DTypeError), x and y of one dtype. Gradient: g to x where condition, to y
// elsewhere, each summed back to its shape.
Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y);
// Converts to `dtype`, any but string: floats to ints truncate toward zero (saturating,
// NaN -> 0; to uint8 that clamps to [0, 255], where NumPy's astype on x86 would wrap -1.0
// to 255), ints to narrower ints wrap (int32 300 -> uint8 44, as NumPy), to bool is
// x != 0, bool to numbers is 0 or 1. Casting to the same dtype returns a view.
// Differentiable between floating dtypes (the gradient is cast back).
Tensor cast(const Tensor& x, DType dtype);

}  // namespace chorus::ops
