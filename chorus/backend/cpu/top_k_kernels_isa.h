// The instruction-set-specific half of top-k selection: the scans over a row of scores
// compiled once per ISA (top_k_kernels_impl.h, included by top_k_kernels_{baseline,avx2,
// avx512}.cc); top_k_kernels.cc keeps the running selection. Tables are immutable; thread-safe.
#pragma once

#include <cstdint>

#include "chorus/backend/cpu/isa.h"

namespace chorus::backend::cpu {

// A score offered to a selection, and its rank as one integer: `order` is smaller for the
// candidate that ranks first (a higher score, NaN above every number, -0 equal to +0, then
// the lower index), so sorting and selecting compare one uint64_t and never branch on NaNs.
struct TopKCandidate {
  uint64_t order;  // (descending score key) << 32 | index
  float score;
  int32_t index() const { return static_cast<int32_t>(order & 0xffffffffu); }
};

// The most groups group_maxima takes.
inline constexpr int64_t kTopKMaxGroups = 512;

struct TopKKernelTable {
  // Appends {x[j], first + j} to out for every j < n whose score is not below `threshold`
  // (a NaN never is), in ascending j, and returns how many. REQUIRES: out has room for n.
  int64_t (*collect_f32)(const float* x, int64_t n, float threshold, int32_t first, TopKCandidate* out);
  // The same over bfloat16 scores (their bits), widened to float exactly.
  int64_t (*collect_bf16)(const uint16_t* x, int64_t n, float threshold, int32_t first, TopKCandidate* out);
  // out[g] = the largest score x[j] with j % groups == g, NaNs ignored (-inf when there is
  // none), for g < groups. REQUIRES: groups is a power of two from
  // 16 to kTopKMaxGroups, at most n.
  void (*group_maxima_f32)(const float* x, int64_t n, int64_t groups, float* out);
  void (*group_maxima_bf16)(const uint16_t* x, int64_t n, int64_t groups, float* out);
};

// The table for `isa`. REQUIRES: the CPU supports isa (see isa_supported()).
const TopKKernelTable& top_k_kernel_table(Isa isa);

// Per-ISA tables (one per translation unit).
const TopKKernelTable& top_k_table_baseline();
const TopKKernelTable& top_k_table_avx2();
const TopKKernelTable& top_k_table_avx512();

}  // namespace chorus::backend::cpu
