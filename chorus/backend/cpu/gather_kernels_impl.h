// Loop bodies of the row gather/scatter kernels, written once over the native vector
// width kBytes (16: SSE2, 32: AVX2, 64: AVX-512) with GCC vector extensions. Included
// only by gather_kernels_{baseline,avx2,avx512}.cc, each compiled for its ISA; internal
// linkage and builtins only, so no code for a newer ISA can reach an older CPU. A row add
// is one IEEE add per element whatever the width, so every ISA gives the same bits.
#pragma once

#include <cstdint>
#include <cstring>

#include "chorus/backend/cpu/gather_kernels_isa.h"

namespace chorus::backend::cpu {
namespace {

template <int B, class I>
void gather_rows32(const uint32_t* x, const I* idx, int64_t count, int64_t n, uint32_t* out) {
  typedef uint32_t V __attribute__((vector_size(B)));
  constexpr int64_t kLanes = B / 4;
  for (int64_t m = 0; m < count; ++m) {
    const uint32_t* src = x + static_cast<int64_t>(idx[m]) * n;
    uint32_t* dst = out + m * n;
    int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes) {
      V v;
      std::memcpy(&v, src + j, B);
      std::memcpy(dst + j, &v, B);
    }
    for (; j < n; ++j) dst[j] = src[j];
  }
}

template <int B, class I>
void scatter_add_rows(const float* g, const I* idx, int64_t count, int64_t n, int64_t lo, int64_t hi, float* dx) {
  typedef float V __attribute__((vector_size(B)));
  constexpr int64_t kLanes = B / 4;
  for (int64_t m = 0; m < count; ++m) {
    const int64_t i = idx[m];
    if (i < lo || i >= hi) continue;
    const float* src = g + m * n;
    float* dst = dx + i * n;
    int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes) {
      V a, b;
      std::memcpy(&a, dst + j, B);
      std::memcpy(&b, src + j, B);
      a += b;
      std::memcpy(dst + j, &a, B);
    }
    for (; j < n; ++j) dst[j] += src[j];
  }
}

// Each block is tested without an early exit, so that the test vectorises.
template <class I, class U>
int64_t first_bad_block(const I* idx, int64_t count, U limit) {
  for (int64_t b = 0; b < count; b += kIndexBlock) {
    const int64_t e = b + kIndexBlock < count ? b + kIndexBlock : count;
    U bad = 0;
    for (int64_t m = b; m < e; ++m) bad |= static_cast<U>(static_cast<U>(idx[m]) >= limit);
    if (bad != 0) return b;
  }
  return -1;
}

template <int B>
constexpr GatherKernelTable make_gather_table() {
  return GatherKernelTable{
      .gather_rows32_i32 = &gather_rows32<B, int32_t>,
      .gather_rows32_i64 = &gather_rows32<B, int64_t>,
      .scatter_add_rows_i32 = &scatter_add_rows<B, int32_t>,
      .scatter_add_rows_i64 = &scatter_add_rows<B, int64_t>,
      .first_bad_block_i32 = &first_bad_block<int32_t, uint32_t>,
      .first_bad_block_i64 = &first_bad_block<int64_t, uint64_t>,
  };
}

}  // namespace
}  // namespace chorus::backend::cpu
