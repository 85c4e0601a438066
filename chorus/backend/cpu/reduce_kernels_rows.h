// Part of reduce_kernels_impl.h (included from its middle, after Simd and to_float):
// kernels over many short rows at once, where a call per row would cost more than the
// row. Internal linkage like the rest of that header; compiled once per ISA. Thread-safe.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "chorus/backend/cpu/reduce_kernels_isa.h"

namespace chorus::backend::cpu {
namespace {

// ---- short rows: sixteen rows of n < kShortRow elements at a time ----------------------
// A short row sums in 16 logical lanes (lane l: x[l], then + x[l + 16], + x[l + 32], ...
// in order; elements past n count as +0), then a halving tree over the lanes (l += l + 8,
// then 4, 2, 1). Sixteen rows run through the halving tree together, transposing as they
// go: each level adds two shuffles of a pair of vectors, so the last vector holds the
// sixteen sums in row order. The vectors are 16 floats whatever kBytes (GCC splits them
// on narrower ISAs), so the bits are the same on every ISA; the per-row call this
// replaces summed in order, one dependent add per element.
typedef float F16 __attribute__((vector_size(64)));
typedef int32_t I16 __attribute__((vector_size(64)));

// (Vectors pass by reference: a 64-byte vector by value changes the ABI below AVX-512.)

// v = x[0, n) as 16 lanes, +0 past n. REQUIRES: 0 < n <= 16.
template <class T>
void load16(const T* x, int64_t n, F16& v) {
  if (std::is_same_v<T, float> && n == 16) {
    std::memcpy(&v, x, 64);
    return;
  }
  float buf[16] = {};
  for (int64_t j = 0; j < n; ++j) buf[j] = to_float(x[j]);
  std::memcpy(&v, buf, 64);
}

// Row r's 16 lanes (see above). REQUIRES: 0 < n < kShortRow.
template <class T>
void short_row_lanes(const T* x, int64_t n, F16& acc) {
  load16(x, n < 16 ? n : 16, acc);
  for (int64_t k = 16; k < n; k += 16) {
    F16 v;
    load16(x + k, n - k < 16 ? n - k : 16, v);
    acc += v;
  }
}

// One level of the transposing halving tree: a and b each hold 8 / w rows of 2w lanes;
// the result holds a's rows then b's, each of w lanes (lane j + lane j + w).
template <int kW>
struct HalveMasks {
  int32_t lo[16], hi[16];
  constexpr HalveMasks() : lo(), hi() {
    for (int k = 0; k < 16; ++k) {
      const int q = k / kW, j = k % kW, rows_in = 8 / kW;
      lo[k] = (q < rows_in ? 0 : 16) + (q % rows_in) * 2 * kW + j;
      hi[k] = lo[k] + kW;
    }
  }
};

// out may be a or b.
template <int kW>
void halve_pair(const F16& a, const F16& b, F16& out) {
  static constexpr HalveMasks<kW> kMasks;
  I16 lo, hi;
  std::memcpy(&lo, kMasks.lo, 64);
  std::memcpy(&hi, kMasks.hi, 64);
  out = __builtin_shuffle(a, b, lo) + __builtin_shuffle(a, b, hi);
}

// out[r] = the sum of row r of x (rows, n), for n < kShortRow.
template <class T>
void sum_short_rows(const T* x, int64_t rows, int64_t n, float* out) {
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    const int64_t count = rows - r0 < 16 ? rows - r0 : 16;
    F16 v[16];
    for (int64_t r = 0; r < 16; ++r) {
      if (r < count) {
        short_row_lanes(x + (r0 + r) * n, n, v[r]);
      } else {
        v[r] = F16{};
      }
    }
    for (int i = 0; i < 8; ++i) halve_pair<8>(v[2 * i], v[2 * i + 1], v[i]);
    for (int i = 0; i < 4; ++i) halve_pair<4>(v[2 * i], v[2 * i + 1], v[i]);
    for (int i = 0; i < 2; ++i) halve_pair<2>(v[2 * i], v[2 * i + 1], v[i]);
    halve_pair<1>(v[0], v[1], v[0]);
    if (count == 16) {
      std::memcpy(out + r0, &v[0], 64);
    } else {
      for (int64_t r = 0; r < count; ++r) out[r0 + r] = v[0][r];
    }
  }
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
