// Dropout masks from Philox-4x32-10 computed in vector registers: many counters per
// instruction instead of one block per call. Every ISA gives the bits of
// chorus::philox4x32 (core/random.h) taken one block at a time. Thread-safe: no shared state.
#pragma once

#include <cstdint>

#include "chorus/backend/cpu/isa.h"
#include "chorus/core/bfloat16.h"

namespace chorus::backend::cpu {

// out[i], i < n, is element j = first + i of the mask under `key`: keep_scale where the
// top 24 bits of word j % 4 of Philox block j / 4 (counter's upper 64 bits zero) are >=
// threshold, else 0. Split across threads in whole blocks; the bits do not depend on it.
void dropout_mask(uint64_t key, int64_t first, uint32_t threshold, float keep_scale, float* out, int64_t n,
                  Isa isa = active_isa());
void dropout_mask(uint64_t key, int64_t first, uint32_t threshold, float keep_scale, bfloat16* out, int64_t n,
                  Isa isa = active_isa());

}  // namespace chorus::backend::cpu
