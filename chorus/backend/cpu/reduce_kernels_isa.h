// The instruction-set-specific half of the reduction and softmax kernels: a table of
// serial leaf kernels compiled once per ISA (reduce_kernels_impl.h, included by
// reduce_kernels_{baseline,avx2,avx512}.cc). The drivers in reduce_kernels.cc and
// softmax_kernels.cc pick a table and split the work across threads. Tables are
// immutable; thread-safe.
#pragma once

#include <cstdint>

#include "chorus/backend/cpu/isa.h"
#include "chorus/core/bfloat16.h"

namespace chorus::backend::cpu {

enum class ReduceKind { kSum, kMax, kMin };

// Leaf sizes of the fixed pairwise tree that float sums follow. A contiguous row of n
// elements is cut into leaves of kSumLeaf elements (summed in 64 interleaved lanes);
// a strided column into leaves of kRowLeaf rows (summed in order). Above the leaves the
// tree splits a range of L leaves after the largest power of two below L, so every
// aligned run of leaf * 2^j elements is a subtree: threads can sum such chunks on their
// own and combine them with combine_sums() without changing a bit.
// A whole row shorter than kShortRow is not part of that tree: it sums in 16 lanes,
// then halves them (sum_short_row in reduce_kernels_rows.h).
inline constexpr int64_t kSumLeaf = 2048;
inline constexpr int64_t kShortRow = 64;
inline constexpr int64_t kRowLeaf = 32;
// Columns a strided kernel carries through its tree at once (one row span per leaf row).
inline constexpr int64_t kWideColumns = 512;

struct ReduceKernelTable {
  // out[r] = reduce(x[r * n .. r * n + n)) for r < rows. REQUIRES: n >= 1.
  void (*reduce_contiguous_f32)(ReduceKind kind, const float* x, int64_t rows, int64_t n, float* out);
  void (*reduce_contiguous_bf16)(ReduceKind kind, const bfloat16* x, int64_t rows, int64_t n, float* out);
  // out[j] = reduce over r < rows of x[r * stride + j], for j < width. REQUIRES: rows >= 1.
  void (*reduce_strided_f32)(ReduceKind kind, const float* x, int64_t rows, int64_t stride, int64_t width,
                             float* out);
  void (*reduce_strided_bf16)(ReduceKind kind, const bfloat16* x, int64_t rows, int64_t stride, int64_t width,
                              float* out);

  // Row kernels over (rows, n) contiguous arrays, n >= 1. y may alias x.
  void (*softmax_rows)(const float* x, float* y, int64_t rows, int64_t n);
  void (*log_softmax_rows)(const float* x, float* y, int64_t rows, int64_t n);
  void (*logsumexp_rows)(const float* x, float* out, int64_t rows, int64_t n);
  // loss[r] = log(sum(exp(x - m))) - (x[labels[r]] - m) with m the row's max; keeps m in
  // max[r] and the sum in sum[r]. REQUIRES: labels in [0, n).
  void (*sparse_cross_entropy_rows_f32)(const float* x, const int64_t* labels, int64_t rows, int64_t n, float* loss,
                                        float* max, float* sum);
  void (*sparse_cross_entropy_rows_bf16)(const bfloat16* x, const int64_t* labels, int64_t rows, int64_t n,
                                         float* loss, float* max, float* sum);
  // Its backward: dx = g * (exp(x - max) / sum - one_hot(labels)), computed in float32.
  void (*sparse_cross_entropy_grad_rows_f32)(const float* x, const int64_t* labels, const float* max,
                                             const float* sum, const float* g, float* dx, int64_t rows, int64_t n);
  void (*sparse_cross_entropy_grad_rows_bf16)(const bfloat16* x, const int64_t* labels, const float* max,
                                              const float* sum, const float* g, bfloat16* dx, int64_t rows,
                                              int64_t n);
  // dx = y * (g - sum(g * y)) per row.
  void (*softmax_grad_rows)(const float* y, const float* g, float* dx, int64_t rows, int64_t n);
  // dx = g - exp(y) * sum(g) per row.
  void (*log_softmax_grad_rows)(const float* y, const float* g, float* dx, int64_t rows, int64_t n);
  // dx[i] = exp(x[i] - shift) * scale, or 0 where shift is -inf.
  void (*exp_shift_scale)(const float* x, float* dx, int64_t n, float shift, float scale);
  // dx[i] = exp(x[i] - shift[i]) * scale[i], or 0 where shift[i] is -inf.
  void (*exp_shift_scale_each)(const float* x, float* dx, int64_t n, const float* shift, const float* scale);

  // out[r * n + j] = x[r] for r < rows, j < n: 4-byte elements copied as bits (the
  // backward of a sum over short rows). REQUIRES: out does not overlap x.
  void (*broadcast_rows32)(const uint32_t* x, uint32_t* out, int64_t rows, int64_t n);

  // out[r] = the first index of the largest element of row r, or of its first NaN.
  void (*argmax_rows_f32)(const float* x, int64_t rows, int64_t n, int64_t* out);
  void (*argmax_rows_bf16)(const bfloat16* x, int64_t rows, int64_t n, int64_t* out);
};

// The table for `isa`. REQUIRES: the CPU supports isa (see isa_supported()).
const ReduceKernelTable& reduce_kernel_table(Isa isa);

// Per-ISA tables (one per translation unit).
const ReduceKernelTable& reduce_table_baseline();
const ReduceKernelTable& reduce_table_avx2();
const ReduceKernelTable& reduce_table_avx512();

}  // namespace chorus::backend::cpu
