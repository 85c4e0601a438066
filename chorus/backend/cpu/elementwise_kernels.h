// Elementwise CPU kernels: the drivers that run one kernel (an op code of
// elementwise_op_codes.h) over tensors with NumPy broadcasting and intra-op threads. The
// loops are compiled once per ISA (elementwise_kernels_{baseline,avx2,avx512}.cc) and
// picked by active_isa() (isa.h). Thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "chorus/backend/cpu/elementwise_op_codes.h"
#include "chorus/backend/cpu/isa.h"
#include "chorus/core/tensor.h"

namespace chorus::backend::cpu {

// out = op(a, b) with NumPy broadcasting. REQUIRES: a and b have equal dtypes supported by
// op; out is a fresh contiguous tensor of shape broadcast_shapes(a, b) and dtype
// binary_result_dtype(op, a.dtype()), sharing no storage with a or b. Integer kDivide
// REQUIRES no zero in b (check with contains_zero first).
void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out, KernelParams params = {});
// out = op(x). REQUIRES: unary_supported(op, x.dtype()); out fresh, same shape and dtype.
void unary(UnaryOp op, const Tensor& x, const Tensor& out, KernelParams params = {});
// The contiguous loops binary() and unary() run, on raw buffers of `n` elements: a chain
// of elementwise ops fused into one pass (chorus/jit) runs them block by block, with the
// same bits as the whole-tensor drivers. `a_scalar`/`b_scalar`: that operand stays on its
// first element. REQUIRES: as binary() and unary(); `dtype` is the inputs'; not both scalar
// unless n == 1.
void binary_loop(BinaryOp op, DType dtype, const void* a, bool a_scalar, const void* b, bool b_scalar, void* out,
                 int64_t n, const KernelParams& params);
void unary_loop(UnaryOp op, DType dtype, const void* x, void* out, int64_t n, const KernelParams& params);
// out = condition ? x : y, all three broadcast to out's shape. REQUIRES: condition bool,
// x and y of out's dtype.
void where(const Tensor& condition, const Tensor& x, const Tensor& y, const Tensor& out);
// out = x converted to out's dtype (same shape): floats to ints truncate toward zero
// (saturating; NaN gives 0; to uint8 that is clamping to [0, 255]), ints to uint8 wrap
// modulo 256, to bool is x != 0, bool to numbers is 0 or 1.
void cast(const Tensor& x, const Tensor& out);
// The same conversion of `n` contiguous elements between raw buffers (operands that are
// not tensors of their own: matmul's bfloat16 fallback).
void cast(const void* x, DType from, void* out, DType to, int64_t n);
// Whether any element of x is zero (integer division's precondition).
bool contains_zero(const Tensor& x);

}  // namespace chorus::backend::cpu
