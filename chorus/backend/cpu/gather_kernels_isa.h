// The instruction-set-specific half of take and its gradient: row copies and row adds
// compiled once per ISA (gather_kernels_impl.h, included by gather_kernels_{baseline,
// avx2,avx512}.cc); gather_kernels.cc picks a table and splits rows across threads.
// Tables are immutable; thread-safe.
#pragma once

#include <cstdint>

#include "chorus/backend/cpu/isa.h"

namespace chorus::backend::cpu {

struct GatherKernelTable {
  // out[m, :] = x[idx[m], :] for m < count, rows of n 4-byte elements copied as bits.
  // REQUIRES: every idx[m] is a row of x; out does not overlap x.
  void (*gather_rows32_i32)(const uint32_t* x, const int32_t* idx, int64_t count, int64_t n, uint32_t* out);
  void (*gather_rows32_i64)(const uint32_t* x, const int64_t* idx, int64_t count, int64_t n, uint32_t* out);
  // dx[idx[m], :] += g[m, :] for the m < count, in ascending order, with lo <= idx[m] < hi
  // (the rows one thread owns); rows of n floats. REQUIRES: dx does not overlap g.
  void (*scatter_add_rows_i32)(const float* g, const int32_t* idx, int64_t count, int64_t n, int64_t lo, int64_t hi,
                               float* dx);
  void (*scatter_add_rows_i64)(const float* g, const int64_t* idx, int64_t count, int64_t n, int64_t lo, int64_t hi,
                               float* dx);
  // The start of the first block of kIndexBlock indices that holds one not below `limit`
  // as an unsigned number (negative ones included), or -1.
  int64_t (*first_bad_block_i32)(const int32_t* idx, int64_t count, uint32_t limit);
  int64_t (*first_bad_block_i64)(const int64_t* idx, int64_t count, uint64_t limit);
};

inline constexpr int64_t kIndexBlock = 256;

// The table for `isa`. REQUIRES: the CPU supports isa (see isa_supported()).
const GatherKernelTable& gather_kernel_table(Isa isa);

// Per-ISA tables (one per translation unit).
const GatherKernelTable& gather_table_baseline();
const GatherKernelTable& gather_table_avx2();
const GatherKernelTable& gather_table_avx512();

}  // namespace chorus::backend::cpu
