// Internal to the elementwise ops (elementwise*.cc): argument checks with the ops' error
// messages, and the forward/backward kernel launches they share. Thread-safe.
#pragma once

#include "chorus/backend/cpu/elementwise_kernels.h"
#include "chorus/core/tensor.h"

namespace chorus::ops::detail {

using backend::cpu::BinaryOp;
using backend::cpu::KernelParams;
using backend::cpu::UnaryOp;

// Throws ValueError "add: argument b is an undefined tensor".
void check_defined(const char* op, const Tensor& t, const char* name);  // also refuses strings
// Throws DTypeError "add: dtypes differ: float32 and int32".
void check_same_dtype(const char* op, const Tensor& a, const Tensor& b);
// Throws DTypeError "exp: expected a floating dtype (float32 or bfloat16), got int32".
void check_floating(const char* op, const Tensor& x);
// Throws DTypeError "add: expected a numeric dtype (float32, bfloat16, int32 or int64), got bool".
void check_numeric(const char* op, const Tensor& x);

// Checks (defined, equal dtypes, the kernel's dtype class, broadcastable shapes) and
// returns op(a, b) as a fresh tensor. Not recorded.
Tensor binary_forward(const char* op, BinaryOp code, const Tensor& a, const Tensor& b);
// Checks (defined, the kernel's dtype class) and returns op(x) as a fresh tensor.
Tensor unary_forward(const char* op, UnaryOp code, const Tensor& x, KernelParams params = {});
// A fused backward kernel: code(saved, grad) where saved is the forward input or output.
// REQUIRES: equal shapes and floating dtypes (backward functions only).
Tensor backward_kernel(BinaryOp code, const Tensor& saved, const Tensor& grad, KernelParams params = {});

}  // namespace chorus::ops::detail
