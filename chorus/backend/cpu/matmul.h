// The CPU matmul kernel: oneDNN's matmul primitive (brgemm JIT kernels for AVX-512, and
// AMX for bfloat16 where the CPU has it) behind a bounded per-thread primitive cache.
// Thread-safe: each thread owns its engine, stream and cache, so the hot path takes no lock.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "chorus/core/dtype.h"
#include "chorus/core/shape.h"

namespace chorus::backend::cpu {

// One (batched) matrix product c = a @ b, described in elements. All three operands have
// the same rank (2 to kMaxRank); the last two axes are the matrix axes: a is (.., M, K),
// b is (.., K, N), c is (.., M, N). A batch axis of a or b may be 1 where c's is larger
// (broadcast). Transposes are expressed with strides: a transposed (K, M) row-major
// buffer is a with dims (M, K) and strides (1, M). c is contiguous row-major unless
// c_strides is set (all zero: contiguous), e.g. to write heads (B, N, T, D) straight
// into a (B, T, N, D) buffer. Unused trailing entries must stay zero (the struct is
// hashed as a whole).
struct MatmulProblem {
  int rank = 2;
  DType dtype = kFloat32;  // of a, b and c: kFloat32 or kBFloat16
  std::array<int64_t, kMaxRank> a_dims{}, a_strides{};
  std::array<int64_t, kMaxRank> b_dims{}, b_strides{};
  std::array<int64_t, kMaxRank> c_dims{};
  std::array<int64_t, kMaxRank> c_strides{};  // all zero: contiguous row-major
  bool bias = false;  // c = a @ b + bias, a contiguous (N,) vector of dtype added to every row

  friend bool operator==(const MatmulProblem&, const MatmulProblem&) = default;
};

// Computes `p` on the calling thread's intra-op thread budget, reading a and b and
// writing every element of c (every element c's dims and strides reach). bfloat16 accumulates in float32 and rounds once; on a CPU
// where oneDNN has no bfloat16 matmul (no AVX-512), it runs in float32 on widened copies.
// The bias, when p.bias, is added to the float32 accumulator before c is rounded.
// REQUIRES: the dims are consistent (a's K equals b's K, batch axes equal or 1), c has
// at least one element, K >= 1 (callers handle empty products: oneDNN 2.6 divides by
// zero on M == 0), and bias is set exactly when p.bias. Pointers are borrowed for the
// duration of the call only.
void matmul(const MatmulProblem& p, const void* a, const void* b, void* c, const void* bias = nullptr);

// Primitives cached on the calling thread (for tests). At most kMatmulCacheCapacity;
// the least recently used one is dropped first.
inline constexpr size_t kMatmulCacheCapacity = 256;
size_t matmul_cache_size();
// Drops the calling thread's cached primitives.
void clear_matmul_cache();

}  // namespace chorus::backend::cpu
