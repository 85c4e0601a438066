// Internal to the elementwise kernels: the table of contiguous loops each ISA file
// exports, and how the dispatcher indexes it. Tables are immutable constants; thread-safe.
#pragma once

#include <array>
#include <cstdint>

#include "chorus/backend/cpu/elementwise_op_codes.h"

namespace chorus::backend::cpu {

// How a binary loop reads its operands: both advance, or one stays on its first element
// (a broadcast scalar, or a broadcast axis innermost after collapsing).
enum class Layout : uint8_t { kVectorVector, kVectorScalar, kScalarVector };
inline constexpr int kNumLayouts = 3;

// out[i] = op(a[i or 0], b[i or 0]) for i in [0, n).
using BinaryKernel = void (*)(const void* a, const void* b, void* out, int64_t n, const KernelParams& params);
// out[i] = op(x[i]).
using UnaryKernel = void (*)(const void* x, void* out, int64_t n, const KernelParams& params);
// out[i] = c[i or 0] ? x[i or 0] : y[i or 0]; which operands advance is part of the kernel.
using WhereKernel = void (*)(const uint8_t* condition, const void* x, const void* y, void* out, int64_t n);
// out[i] = convert(x[i]).
using CastKernel = void (*)(const void* x, void* out, int64_t n);

// Element sizes where() copies: 1, 2, 4, 8 bytes.
inline constexpr int kNumWhereSizes = 4;
inline constexpr int kNumWhereLayouts = 8;  // bit 2: condition advances, bit 1: x, bit 0: y

struct KernelTable {
  std::array<BinaryKernel, kNumBinaryOps * kNumDTypes * kNumLayouts> binary;
  std::array<UnaryKernel, kNumUnaryOps * kNumDTypes> unary;
  std::array<CastKernel, kNumDTypes * kNumDTypes> cast;
  std::array<WhereKernel, kNumWhereSizes * kNumWhereLayouts> where;

  static constexpr int binary_index(BinaryOp op, DType dtype, Layout layout) {
    return (static_cast<int>(op) * kNumDTypes + static_cast<int>(dtype)) * kNumLayouts + static_cast<int>(layout);
  }
  static constexpr int unary_index(UnaryOp op, DType dtype) {
    return static_cast<int>(op) * kNumDTypes + static_cast<int>(dtype);
  }
  static constexpr int cast_index(DType from, DType to) {
    return static_cast<int>(from) * kNumDTypes + static_cast<int>(to);
  }
  static constexpr int where_index(int size_index, int layout) { return size_index * kNumWhereLayouts + layout; }
};

// One table per ISA, each defined in its own file compiled with that ISA's flags.
const KernelTable& baseline_kernel_table();
const KernelTable& avx2_kernel_table();
const KernelTable& avx512_kernel_table();

}  // namespace chorus::backend::cpu
