// The elementwise kernels' op codes, the dtypes each supports and their extra scalar
// arguments: what the drivers (elementwise_kernels.h) and the per-ISA loop tables
// (elementwise_table.h) share. Constants only; thread-safe.
#pragma once

#include <cstdint>

#include "chorus/core/dtype.h"

namespace chorus::backend::cpu {

// Two-operand kernels. The first group are the public ops; the *Grad ones are fused
// backward kernels taking (forward input x or output y, upstream gradient g) -> dL/dx.
enum class BinaryOp : uint8_t {
  kAdd, kSubtract, kMultiply, kDivide, kMaximum, kMinimum, kPower,
  kEqual, kNotEqual, kLess, kLessEqual, kGreater, kGreaterEqual,
  kReluGrad,      // (x, g): g where x > 0
  kAbsGrad,       // (x, g): g sign(x), 0 at 0
  kSquareGrad,    // (x, g): 2 x g
  kSqrtGrad,      // (y, g): g / (2 y)
  kRsqrtGrad,     // (y, g): -g y^3 / 2
  kSigmoidGrad,   // (y, g): g y (1 - y)
  kTanhGrad,      // (y, g): g (1 - y^2)
  kSoftplusGrad,  // (x, g): g sigmoid(x)
  kGeluTanhGrad,  // (x, g)
  kGeluErfGrad,   // (x, g)
  kClipGrad,      // (x, g): g where lo <= x <= hi (params)
  kCount
};
inline constexpr int kNumBinaryOps = static_cast<int>(BinaryOp::kCount);

enum class UnaryOp : uint8_t {
  kNegative, kAbs, kSquare, kRelu, kClip,  // numeric dtypes
  kExp, kLog, kSqrt, kRsqrt, kSigmoid, kTanh, kSoftplus, kGeluTanh, kGeluErf,  // floating
  kCount
};
inline constexpr int kNumUnaryOps = static_cast<int>(UnaryOp::kCount);
// Table slots per dtype: one per DType value. kString's stay empty (ops refuse strings
// before any kernel), and uint8 has only cast, equal, not_equal and where.
inline constexpr int kNumDTypes = 7;

// Extra scalar arguments: clip bounds (kClip, kClipGrad). For integer dtypes the bounds
// are rounded inward (ceil(lo), floor(hi)) and saturated to the type's range.
struct KernelParams {
  double lo = 0;
  double hi = 0;
};

constexpr bool is_comparison(BinaryOp op) { return op >= BinaryOp::kEqual && op <= BinaryOp::kGreaterEqual; }

// Which input dtypes a kernel exists for (the ops check first and throw DTypeError).
constexpr bool binary_supported(BinaryOp op, DType dtype) {
  if (dtype == DType::kString) return false;
  if (op == BinaryOp::kEqual || op == BinaryOp::kNotEqual) return true;
  if (dtype == DType::kBool || dtype == DType::kUInt8) return false;
  if (op <= BinaryOp::kMinimum || is_comparison(op)) return true;
  return is_floating(dtype);
}
constexpr bool unary_supported(UnaryOp op, DType dtype) {
  if (dtype == DType::kString) return false;
  if (dtype == DType::kBool || dtype == DType::kUInt8) return false;
  return op <= UnaryOp::kClip || is_floating(dtype);
}
// Result dtype of a binary kernel on `dtype` inputs.
constexpr DType binary_result_dtype(BinaryOp op, DType dtype) { return is_comparison(op) ? DType::kBool : dtype; }

}  // namespace chorus::backend::cpu
