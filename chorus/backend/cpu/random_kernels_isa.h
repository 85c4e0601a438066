// The instruction-set-specific half of random_kernels: serial loops compiled once per ISA
// (random_kernels_impl.h, included by random_kernels_{baseline,avx2,avx512}.cc). Tables
// are immutable; thread-safe.
#pragma once

#include <cstdint>

#include "chorus/backend/cpu/isa.h"

namespace chorus::backend::cpu {

struct RandomKernelTable {
  // out[i] for i < n: the mask of element first_block * 4 + skip + i (random_kernels.h),
  // written as bits: keep_bits (the keep scale's float32 or bfloat16 pattern) or 0.
  // REQUIRES: skip < 4.
  void (*dropout_mask32)(uint64_t key, uint64_t first_block, int skip, uint32_t threshold, uint32_t keep_bits,
                         uint32_t* out, int64_t n);
  void (*dropout_mask16)(uint64_t key, uint64_t first_block, int skip, uint32_t threshold, uint16_t keep_bits,
                         uint16_t* out, int64_t n);
};

// The table for `isa`. REQUIRES: the CPU supports isa.
const RandomKernelTable& random_kernel_table(Isa isa);
const RandomKernelTable& random_table_baseline();
const RandomKernelTable& random_table_avx2();
const RandomKernelTable& random_table_avx512();

}  // namespace chorus::backend::cpu
