// Part of reduce_kernels_impl.h (included from its middle, after Simd and to_float):
// kernels over many short rows in one call, where a call per row would cost more than the
// row. Internal linkage like the rest of that header; compiled once per ISA. Thread-safe.
#pragma once

#include <cstdint>
#include <cstring>

#include "chorus/backend/cpu/reduce_kernels_isa.h"

namespace chorus::backend::cpu {
namespace {

// ---- short rows: a row of n < kShortRow elements ------------------------------------
// A short row sums in 16 logical lanes (lane l: x[l], then + x[l + 16], + x[l + 32], ...
// in order; elements past n count as +0), then a halving tree over the lanes (lane j +=
// lane j + 8, then 4, 2, 1). Every ISA adds the same pairs, so the bits are the same on
// each; the generic path summed such a row in order, one dependent add per element, at
// a kernel call per row. (Sixteen rows at once, transposed through the tree with
// 64-byte shuffles, measured slower than this on AVX-512 and far slower below it.)

// Lane shifts for the in-vector levels of sum_short_row: shift[level][j] = j + w (w =
// L / 2, L / 4, ..., 1), constants so GCC need not build them per row.
template <int L>
struct ShiftMasks {
  int32_t shift[4][L];
  constexpr ShiftMasks() : shift() {
    int level = 0;
    for (int w = L / 2; w >= 1; w /= 2, ++level) {
      for (int j = 0; j < L; ++j) shift[level][j] = j + w < L ? j + w : j;
    }
  }
};

// One short row's sum in native vectors of B bytes (L lanes): the 16 lanes are 16 / L
// vectors; the tree's levels w >= L add whole vectors (lane j + lane j + w), the levels
// below add a vector to itself shifted by w lanes.
template <int B, class T>
float sum_short_row(const T* x, int64_t n) {
  using S = Simd<B>;
  constexpr int L = S::kLanes, V = 16 / L;
  typename S::F v[V];
  for (int i = 0; i < V; ++i) {
    const int64_t k = i * L;
    v[i] = k + L <= n ? S::load(x + k) : (k < n ? S::load_partial(x + k, n - k, 0.f) : S::splat(0.f));
  }
  for (int64_t base = 16; base < n; base += 16) {
    for (int i = 0; i < V; ++i) {
      const int64_t k = base + i * L;
      v[i] += k + L <= n ? S::load(x + k) : (k < n ? S::load_partial(x + k, n - k, 0.f) : S::splat(0.f));
    }
  }
  for (int w = 8; w >= L; w /= 2) {
    for (int i = 0; i < w / L; ++i) v[i] += v[i + w / L];
  }
  typename S::F acc = v[0];
#if defined(__clang__)
  // Clang has no __builtin_shuffle with a run-time mask: the same adds lane by lane, in
  // the same order, so both compilers give the same bits.
  for (int w = L / 2; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  }
#else
  static constexpr ShiftMasks<L> kMasks;
  for (int level = 0; (L >> (level + 1)) >= 1; ++level) {
    typename S::I shift;
    std::memcpy(&shift, kMasks.shift[level], sizeof(shift));
    acc += __builtin_shuffle(acc, shift);
  }
#endif
  return acc[0];
}

// out[r] = the sum of row r of x (rows, n), for n < kShortRow.
template <int B, class T>
void sum_short_rows(const T* x, int64_t rows, int64_t n, float* out) {
  for (int64_t r = 0; r < rows; ++r) out[r] = sum_short_row<B>(x + r * n, n);
}

// ---- broadcast rows (the backward of a last-axis sum) ---------------------------------

template <int B>
void broadcast_rows32(const uint32_t* x, uint32_t* out, int64_t rows, int64_t n) {
  using S = Simd<B>;
  for (int64_t r = 0; r < rows; ++r) {
    const typename S::U v = typename S::U{} + x[r];
    uint32_t* row = out + r * n;
    int64_t j = 0;
    for (; j + S::kLanes <= n; j += S::kLanes) std::memcpy(row + j, &v, B);
    for (; j < n; ++j) row[j] = x[r];
  }
}

}  // namespace
}  // namespace chorus::backend::cpu
