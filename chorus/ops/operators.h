// Arithmetic operators on tensors, so that model code reads like NumPy: `a * b + c`,
// `x / 255.0`, `-x`. Scalars become rank-0 tensors of the other operand's dtype.
#pragma once

#include "chorus/core/creation.h"
#include "chorus/ops/elementwise.h"

namespace chorus {

inline Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return ops::subtract(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return ops::multiply(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return ops::divide(a, b); }
inline Tensor operator-(const Tensor& x) { return ops::negative(x); }

inline Tensor operator+(const Tensor& a, double b) { return ops::add(a, scalar(b, a.dtype())); }
inline Tensor operator-(const Tensor& a, double b) { return ops::subtract(a, scalar(b, a.dtype())); }
inline Tensor operator*(const Tensor& a, double b) { return ops::multiply(a, scalar(b, a.dtype())); }
inline Tensor operator/(const Tensor& a, double b) { return ops::divide(a, scalar(b, a.dtype())); }
inline Tensor operator+(double a, const Tensor& b) { return ops::add(scalar(a, b.dtype()), b); }
inline Tensor operator-(double a, const Tensor& b) { return ops::subtract(scalar(a, b.dtype()), b); }
inline Tensor operator*(double a, const Tensor& b) { return ops::multiply(scalar(a, b.dtype()), b); }
inline Tensor operator/(double a, const Tensor& b) { return ops::divide(scalar(a, b.dtype()), b); }

}  // namespace chorus
