// The instruction-set-specific half of random_kernels: serial loops compiled once per ISA
// (random_kernels_impl.h, included by random_kernels_{baseline,avx2,avx512}.cc). Tables
// are immutable; thread-safe.
#pragma once

#include <cstdint>

#include "chorus/backend/cpu/isa.h"
#include "chorus/core/bfloat16.h"

namespace chorus::backend::cpu {

struct RandomKernelTable {
  // out[i] for i < n: the mask of element first_block * 4 + skip + i (random_kernels.h).
  // REQUIRES: skip < 4.
  void (*dropout_mask_f32)(uint64_t key, uint64_t first_block, int skip, uint32_t threshold, float keep_scale,
                           float* out, int64_t n);
  void (*dropout_mask_bf16)(uint64_t key, uint64_t first_block, int skip, uint32_t threshold, float keep_scale,
                            bfloat16* out, int64_t n);
};

// The table for `isa`. REQUIRES: the CPU supports isa.
const RandomKernelTable& random_kernel_table(Isa isa);
const RandomKernelTable& random_table_baseline();
const RandomKernelTable& random_table_avx2();
const RandomKernelTable& random_table_avx512();

}  // namespace chorus::backend::cpu
