// Reduction kernels for chorus/ops/reduction.cc: a contiguous tensor is viewed as
// (outer, reduced, inner) and reduced along the middle axis. Float results have the same
// bits for any thread count: sums follow one fixed pairwise tree (reduce_kernels_isa.h)
// and threads only evaluate its subtrees. Threaded with parallel_for above ~32K
// elements. Thread-safe: no shared state.
#pragma once

#include <cstdint>

#include "chorus/backend/cpu/reduce_kernels_isa.h"

namespace chorus::backend::cpu {

// out[o, i] = reduce over r of x[o, r, i], for an (outer, inner) float32 `out`. bfloat16
// is accumulated in float32. Sums are pairwise (error O(log n) ulp; with inner == 1 and
// reduced < kShortRow, 16 lanes then a halving tree) and give the same bits on every
// ISA; max/min return NaN when the range holds one.
// REQUIRES: reduced >= 1; out does not overlap x.
void reduce(ReduceKind kind, const float* x, float* out, int64_t outer, int64_t reduced, int64_t inner,
            Isa isa = active_isa());
void reduce(ReduceKind kind, const bfloat16* x, float* out, int64_t outer, int64_t reduced, int64_t inner,
            Isa isa = active_isa());
// Integer reductions; sums wrap around (two's complement), as TensorFlow's do.
void reduce(ReduceKind kind, const int32_t* x, int32_t* out, int64_t outer, int64_t reduced, int64_t inner);
void reduce(ReduceKind kind, const int64_t* x, int64_t* out, int64_t outer, int64_t reduced, int64_t inner);

// out[o, i] = the first r with the largest x[o, r, i]; a NaN counts as larger than any
// number (so the first NaN wins). Rows (inner == 1) of floats run on the vector kernels.
// REQUIRES: reduced >= 1.
void argmax(const float* x, int64_t* out, int64_t outer, int64_t reduced, int64_t inner, Isa isa = active_isa());
void argmax(const bfloat16* x, int64_t* out, int64_t outer, int64_t reduced, int64_t inner,
            Isa isa = active_isa());
void argmax(const int32_t* x, int64_t* out, int64_t outer, int64_t reduced, int64_t inner);
void argmax(const int64_t* x, int64_t* out, int64_t outer, int64_t reduced, int64_t inner);

// Combines partial results of consecutive aligned chunks (parts[k * stride], k < count)
// the way the pairwise tree combines its subtrees (sum), or in order (max/min).
float combine_partials(ReduceKind kind, const float* parts, int64_t count, int64_t stride);

}  // namespace chorus::backend::cpu
