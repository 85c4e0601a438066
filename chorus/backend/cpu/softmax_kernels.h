// Softmax-family kernels for chorus/ops/softmax.cc and the sparse cross-entropy loss: one
// fused, max-shifted pass per row (no overflow for inputs like 1000), on float32 arrays
// viewed as (outer, n, inner) and normalised along n. Rows (inner == 1) go straight to
// the vector kernels; other axes are transposed to rows and back. Rows are independent,
// so results do not depend on the thread count. Thread-safe: no shared state.
#pragma once

#include <cstdint>

#include "chorus/backend/cpu/reduce_kernels_isa.h"
#include "chorus/core/shape.h"

namespace chorus::backend::cpu {

// y = exp(x - max) / sum(exp(x - max)) along n. A row that is all -inf, or holds +inf or
// NaN, gives NaN (as TensorFlow does). REQUIRES: n >= 1; y may equal x.
void softmax(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, Isa isa = active_isa());
// y = x - logsumexp(x) along n.
void log_softmax(const float* x, float* y, int64_t outer, int64_t n, int64_t inner,
                 Isa isa = active_isa());
// out[o, i] = log(sum_r exp(x[o, r, i])) into an (outer, inner) array; -inf for an all
// -inf row, +inf if the row holds +inf, NaN if it holds NaN.
void logsumexp(const float* x, float* out, int64_t outer, int64_t n, int64_t inner,
               Isa isa = active_isa());

// Backward passes, from the forward output y and its gradient g:
// softmax: dx = y * (g - sum(g * y));  log_softmax: dx = g - exp(y) * sum(g).
void softmax_grad(const float* y, const float* g, float* dx, int64_t outer, int64_t n, int64_t inner,
                  Isa isa = active_isa());
void log_softmax_grad(const float* y, const float* g, float* dx, int64_t outer, int64_t n, int64_t inner,
                      Isa isa = active_isa());

// The logsumexp backward pass: dx = exp(x - lse) * g, where lse and g have shape `kept`
// (`full` with the reduced axes set to 1) and are broadcast to x's shape `full`. Where
// lse is -inf (an all -inf slice) dx is 0.
void logsumexp_grad(const float* x, const Shape& full, const float* lse, const float* g, const Shape& kept,
                    float* dx, Isa isa = active_isa());

// Softmax cross-entropy against integer labels over (rows, n) logits, without writing
// probabilities: loss[r] = -log(softmax(x[r])[labels[r]]), computed in float32 as
// TensorFlow's sparse_softmax_cross_entropy_with_logits does (bfloat16 logits widen as
// they load). max[r] and sum[r] (of exp(x - max)) are what the backward needs besides x.
// A row holding inf or NaN gives NaN. REQUIRES: n >= 1, every label in [0, n).
void sparse_softmax_cross_entropy(const float* x, const int64_t* labels, float* loss, float* max, float* sum,
                                  int64_t rows, int64_t n, Isa isa = active_isa());
void sparse_softmax_cross_entropy(const bfloat16* x, const int64_t* labels, float* loss, float* max, float* sum,
                                  int64_t rows, int64_t n, Isa isa = active_isa());
// Its backward, one pass: dx[r, i] = g[r] * (exp(x[r, i] - max[r]) / sum[r] - (i == labels[r])),
// in float32, rounded once to bfloat16 for bfloat16 logits (what a float32 gradient cast
// back would give).
void sparse_softmax_cross_entropy_grad(const float* x, const int64_t* labels, const float* max, const float* sum,
                                       const float* g, float* dx, int64_t rows, int64_t n, Isa isa = active_isa());
void sparse_softmax_cross_entropy_grad(const bfloat16* x, const int64_t* labels, const float* max, const float* sum,
                                       const float* g, bfloat16* dx, int64_t rows, int64_t n,
                                       Isa isa = active_isa());

}  // namespace chorus::backend::cpu
