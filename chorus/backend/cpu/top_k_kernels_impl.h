// Loop bodies of the top-k scans, written once over the native vector width kBytes (16:
// SSE2, 32: AVX2, 64: AVX-512) with the width's intrinsics. Included only by
// top_k_kernels_{baseline,avx2,avx512}.cc, each compiled for its ISA; internal linkage, so
// no code for a newer ISA can reach an older CPU. Comparisons and maxima are exact, so
// every ISA selects the same candidates.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "chorus/backend/cpu/top_k_kernels_isa.h"

namespace chorus::backend::cpu {
namespace {

// One vector of floats of B bytes, with the two operations the scans need.
template <int B>
struct Floats;

template <>
struct Floats<16> {
  using V = __m128;
  static constexpr int kLanes = 4;
  static V load(const float* p) { return _mm_loadu_ps(p); }
  static V load(const uint16_t* p) {  // bfloat16 bits widened: the 16 bits become the high half
    const __m128i bits = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), bits));
  }
  static V splat(float t) { return _mm_set1_ps(t); }
  // Bit j set when lane j is not below t (NaN lanes included: cmpnlt is unordered-true).
  static uint32_t not_below(V x, V t) { return static_cast<uint32_t>(_mm_movemask_ps(_mm_cmpnlt_ps(x, t))); }
  static V max(V x, V m) { return x > m ? x : m; }  // m where x is NaN
};

#ifdef __AVX2__
template <>
struct Floats<32> {
  using V = __m256;
  static constexpr int kLanes = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load(const uint16_t* p) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  }
  static V splat(float t) { return _mm256_set1_ps(t); }
  static uint32_t not_below(V x, V t) {
    return static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(x, t, _CMP_NLT_UQ)));
  }
  static V max(V x, V m) { return x > m ? x : m; }
};
#endif

#ifdef __AVX512F__
template <>
struct Floats<64> {
  using V = __m512;
  static constexpr int kLanes = 16;
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load(const uint16_t* p) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    // The maskz forms: the plain ones trip GCC 12's -Wmaybe-uninitialized (see max below).
    const __mmask16 all = 0xffff;
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(all, _mm512_maskz_cvtepu16_epi32(all, bits), 16));
  }
  static V splat(float t) { return _mm512_set1_ps(t); }
  static uint32_t not_below(V x, V t) { return _mm512_cmp_ps_mask(x, t, _CMP_NLT_UQ); }
  // GCC's vector operators, not _mm512_max_ps, whose header trips GCC 12's
  // -Wmaybe-uninitialized once inlined.
  static V max(V x, V m) { return x > m ? x : m; }
};
#endif

// The candidate for `score` at `index` (>= 0).
TopKCandidate top_k_candidate(float score, int32_t index) {
  uint32_t bits;
  std::memcpy(&bits, &score, sizeof bits);
  // Ascending keys: negatives reversed below the positives; -0 as +0; every NaN on top.
  // Selects, not branches: the signs of scores are as unpredictable as they are.
  const uint32_t flip = static_cast<uint32_t>(static_cast<int32_t>(bits) >> 31) | 0x80000000u;
  uint32_t key = bits ^ flip;
  key = bits == 0x80000000u ? 0x80000000u : key;
  key = score != score ? 0xffffffffu : key;
  return {(uint64_t{~key} << 32) | static_cast<uint32_t>(index), score};
}

inline float widen(float x) { return x; }
inline float widen(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float out;
  std::memcpy(&out, &wide, sizeof out);
  return out;
}

// Four vectors are tested per step and their masks or-ed: on scores past the first few
// hundred nearly every step finds nothing, and one branch per 4 vectors is what it costs.
template <int B, class S>
int64_t collect(const S* x, int64_t n, float threshold, int32_t first, TopKCandidate* out) {
  using F = Floats<B>;
  constexpr int64_t kStep = 4 * F::kLanes;
  const typename F::V t = F::splat(threshold);
  int64_t count = 0, j = 0;
  for (; j + kStep <= n; j += kStep) {
    // One bit per score of the step (4 x 16 lanes fill 64 bits on AVX-512).
    const uint64_t mask = uint64_t{F::not_below(F::load(x + j), t)} |
                          uint64_t{F::not_below(F::load(x + j + F::kLanes), t)} << F::kLanes |
                          uint64_t{F::not_below(F::load(x + j + 2 * F::kLanes), t)} << 2 * F::kLanes |
                          uint64_t{F::not_below(F::load(x + j + 3 * F::kLanes), t)} << 3 * F::kLanes;
    for (uint64_t m = mask; m != 0; m &= m - 1) {
      const int64_t i = j + __builtin_ctzll(m);
      out[count++] = top_k_candidate(widen(x[i]), first + static_cast<int32_t>(i));
    }
  }
  for (; j < n; ++j) {
    const float score = widen(x[j]);
    if (!(score < threshold)) out[count++] = top_k_candidate(score, first + static_cast<int32_t>(j));
  }
  return count;
}

// Interleaved groups, so that a run of low scores (candidates sorted by some feature)
// lowers no group's maximum. Four accumulators at least, so the maxima are not one chain
// of dependent instructions; their lanes are folded onto the groups at the end.
template <int B, class S>
void group_maxima(const S* x, int64_t n, int64_t groups, float* out) {
  using F = Floats<B>;
  constexpr int64_t kMaxVectors = kTopKMaxGroups / F::kLanes > 4 ? kTopKMaxGroups / F::kLanes : 4;
  const int64_t vectors = groups / F::kLanes > 4 ? groups / F::kLanes : 4, width = vectors * F::kLanes;
  const typename F::V lowest = F::splat(-std::numeric_limits<float>::infinity());
  typename F::V acc[kMaxVectors];
  int64_t j = 0;
  if (vectors == 4) {  // the common case (groups <= 4 lanes' worth), kept in registers
    typename F::V a0 = lowest, a1 = lowest, a2 = lowest, a3 = lowest;
    for (; j + width <= n; j += width) {
      a0 = F::max(F::load(x + j), a0);
      a1 = F::max(F::load(x + j + F::kLanes), a1);
      a2 = F::max(F::load(x + j + 2 * F::kLanes), a2);
      a3 = F::max(F::load(x + j + 3 * F::kLanes), a3);
    }
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
  } else {
    for (int64_t v = 0; v < vectors; ++v) acc[v] = lowest;
    for (; j + width <= n; j += width) {
      for (int64_t v = 0; v < vectors; ++v) acc[v] = F::max(F::load(x + j + v * F::kLanes), acc[v]);
    }
  }
  float lanes[kMaxVectors * F::kLanes];
  std::memcpy(lanes, acc, static_cast<size_t>(width) * sizeof(float));
  for (int64_t t = 0; j + t < n; ++t) {  // the tail: position j + t is in group t % groups
    const float score = widen(x[j + t]);
    lanes[t] = score > lanes[t] ? score : lanes[t];
  }
  const int64_t last = groups - 1;  // groups is a power of two
  for (int64_t g = 0; g < groups; ++g) out[g] = lanes[g];
  for (int64_t p = groups; p < width; ++p) out[p & last] = lanes[p] > out[p & last] ? lanes[p] : out[p & last];
}

template <int B>
constexpr TopKKernelTable make_top_k_table() {
  return {
      .collect_f32 = &collect<B, float>,
      .collect_bf16 = &collect<B, uint16_t>,
      .group_maxima_f32 = &group_maxima<B, float>,
      .group_maxima_bf16 = &group_maxima<B, uint16_t>,
  };
}

}  // namespace
}  // namespace chorus::backend::cpu
