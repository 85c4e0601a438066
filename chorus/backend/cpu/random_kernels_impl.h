// Philox-4x32-10 over kBytes / 8 counters per vector, with GCC vector extensions: each
// 32-bit word sits in a 64-bit lane so that the round's 32 x 32 -> 64-bit products are
// lane-wise pmuludq. Included only by random_kernels_{baseline,avx2,avx512}.cc, each
// compiled for its ISA; internal linkage and builtins only, as reduce_kernels_impl.h.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "chorus/backend/cpu/random_kernels_isa.h"

namespace chorus::backend::cpu {
namespace {

// Philox's multipliers and Weyl increments, as chorus::philox4x32 uses them (a test
// checks every ISA against it).
constexpr uint64_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
constexpr uint64_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;

template <int kBytes>
struct PhiloxLanes {
  typedef uint64_t V __attribute__((vector_size(kBytes)));
  static constexpr int kLanes = kBytes / 8;
  static constexpr int kGroups = 4;  // independent vectors in flight: a round's products take ~5 cycles
  static constexpr int kBlocks = kGroups * kLanes;

  // The low 32 bits of each lane times m (< 2^32), as full 64-bit products: one pmuludq,
  // which GCC does not pick for a plain 64-bit vector multiply.
  static V mul32(V a, uint64_t m) {
    const V mv = V{} + m;
    if constexpr (kBytes == 64) {  // maskz: GCC 12 warns inside _mm512_mul_epu32 (maybe-uninitialized)
      return (V)_mm512_maskz_mul_epu32(0xff, (__m512i)a, (__m512i)mv);
    } else if constexpr (kBytes == 32) {
      return (V)_mm256_mul_epu32((__m256i)a, (__m256i)mv);
    } else {
      return (V)_mm_mul_epu32((__m128i)a, (__m128i)mv);
    }
  }

  // The four words of blocks counter .. counter + kBlocks - 1 in element order:
  // words[4 * b + w] is word w of block counter + b.
  static void blocks(uint64_t key, uint64_t counter, uint32_t* words) {
    // Lanes are set and read through arrays: GCC 12 does not subscript a vector type
    // whose size depends on a template parameter.
    uint64_t lanes[4][kBlocks];
    for (int b = 0; b < kBlocks; ++b) {
      const uint64_t ctr = counter + static_cast<uint64_t>(b);
      lanes[0][b] = ctr & 0xffffffffu;
      lanes[1][b] = ctr >> 32;
    }
    V c0[kGroups], c1[kGroups], c2[kGroups], c3[kGroups];
    for (int g = 0; g < kGroups; ++g) {
      std::memcpy(&c0[g], lanes[0] + g * kLanes, kBytes);
      std::memcpy(&c1[g], lanes[1] + g * kLanes, kBytes);
      c2[g] = c3[g] = V{};
    }
    uint64_t k0 = static_cast<uint32_t>(key), k1 = key >> 32;
    for (int round = 0; round < 10; ++round) {
      for (int g = 0; g < kGroups; ++g) {
        const V p0 = mul32(c0[g], kM0), p1 = mul32(c2[g], kM1);
        const V n0 = (p1 >> 32) ^ c1[g] ^ k0;
        const V n2 = (p0 >> 32) ^ c3[g] ^ k1;
        c1[g] = p1 & 0xffffffffu;
        c3[g] = p0 & 0xffffffffu;
        c0[g] = n0;
        c2[g] = n2;
      }
      k0 = (k0 + kW0) & 0xffffffffu;
      k1 = (k1 + kW1) & 0xffffffffu;
    }
    for (int g = 0; g < kGroups; ++g) {
      std::memcpy(lanes[0] + g * kLanes, &c0[g], kBytes);
      std::memcpy(lanes[1] + g * kLanes, &c1[g], kBytes);
      std::memcpy(lanes[2] + g * kLanes, &c2[g], kBytes);
      std::memcpy(lanes[3] + g * kLanes, &c3[g], kBytes);
    }
    for (int b = 0; b < kBlocks; ++b) {
      for (int w = 0; w < 4; ++w) words[4 * b + w] = static_cast<uint32_t>(lanes[w][b]);
    }
  }
};

// Branch-free: a data-dependent branch would mispredict half the time at rate 0.5.
template <int kBytes, class Bits>
void dropout_mask(uint64_t key, uint64_t first_block, int skip, uint32_t threshold, Bits keep_bits, Bits* out,
                  int64_t n) {
  using P = PhiloxLanes<kBytes>;
  uint32_t words[4 * P::kBlocks];
  for (int64_t i = 0; i < n; first_block += P::kBlocks, skip = 0) {
    P::blocks(key, first_block, words);
    const int64_t take = std::min<int64_t>(4 * P::kBlocks - skip, n - i);
    const uint32_t* w = words + skip;
    for (int64_t e = 0; e < take; ++e) {
      out[i + e] = static_cast<Bits>(keep_bits & (Bits{0} - static_cast<Bits>((w[e] >> 8) >= threshold)));
    }
    i += take;
  }
}

template <int kBytes>
constexpr RandomKernelTable make_random_table() {
  return RandomKernelTable{
      .dropout_mask32 = &dropout_mask<kBytes, uint32_t>,
      .dropout_mask16 = &dropout_mask<kBytes, uint16_t>,
  };
}

}  // namespace
}  // namespace chorus::backend::cpu
