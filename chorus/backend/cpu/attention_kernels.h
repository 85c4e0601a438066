// Row passes of fused scaled dot-product attention (chorus/ops/attention.cc): the
// scale, mask and softmax of each score row in one pass while the row is in cache, and
// the matching backward pass. Scores are (B, N, T, S) float32, one row per (b, n, t).
// Rows are independent and split across threads, so results do not depend on the
// thread count. Thread-safe: no shared state.
#pragma once

#include <array>
#include <cstdint>

#include "chorus/backend/cpu/isa.h"

namespace chorus::backend::cpu {

// The score value a masked position takes before the softmax (Keras's
// _large_negative_number for float32): a fully masked row becomes uniform, not NaN.
inline constexpr float kMaskedScore = -1e9f;

// The shape of the scores and what modifies them.
struct AttentionRows {
  int64_t batch = 0, heads = 0, queries = 0, keys = 0;  // B, N, T, S
  float scale = 1;
  // Keep-mask read as mask[b * ms[0] + n * ms[1] + t * ms[2] + s * ms[3]] (a stride 0
  // broadcasts that axis); a position is kept where the value is > 0.5. nullptr: all kept.
  const float* mask = nullptr;
  std::array<int64_t, 4> mask_strides{};
  // Dropout multipliers (B, N, T, S), 0 or 1 / (1 - rate); nullptr: none.
  const float* dropout = nullptr;
};

// Forward. In place on `scores` (B, N, T, S): s = mask ? s * scale : kMaskedScore, then
// softmax along S, giving the probabilities. When rows.dropout is set, also writes
// dropped = probabilities * dropout (REQUIRES: dropped then non-null, not aliasing).
// REQUIRES: keys >= 1.
void attention_softmax_forward(const AttentionRows& rows, float* scores, float* dropped, Isa isa = active_isa());

// Backward. On entry `grad` holds d(loss)/d(dropped probabilities) (or of the
// probabilities when there is no dropout), (B, N, T, S); `extra` (nullable) adds a
// gradient reaching the probabilities directly. On return `grad` holds d(loss)/d(raw
// scores QK^T): dP = grad * dropout + extra; dS = P * (dP - sum(dP * P)) * scale, and 0
// at masked positions (their score is a constant). REQUIRES: keys >= 1.
void attention_softmax_backward(const AttentionRows& rows, const float* probabilities, const float* extra, float* grad,
                                Isa isa = active_isa());

}  // namespace chorus::backend::cpu
