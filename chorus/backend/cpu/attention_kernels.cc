// Row passes of fused attention: each task takes a run of whole score rows; a row is
// scaled and masked, then normalised by the ISA's softmax row kernel while it is still
// in L1 (S floats: 512 B at S = 128).
#include "chorus/backend/cpu/attention_kernels.h"

#include <algorithm>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/backend/cpu/reduce_kernels_isa.h"

namespace chorus::backend::cpu {
namespace {

constexpr int64_t kAttentionGrain = 16384;  // elements per task

// fn(row, b, n, t) for every row in [begin, end), in order.
template <class Fn>
void for_attention_rows(const AttentionRows& r, int64_t begin, int64_t end, Fn&& fn) {
  int64_t t = begin % r.queries, bn = begin / r.queries;
  for (int64_t row = begin; row < end; ++row) {
    fn(row, bn / r.heads, bn % r.heads, t);
    if (++t == r.queries) {
      t = 0;
      ++bn;
    }
  }
}

// The row of the keep-mask for (b, n, t), or nullptr when there is no mask.
const float* attention_mask_row(const AttentionRows& r, int64_t b, int64_t n, int64_t t) {
  if (r.mask == nullptr) return nullptr;
  return r.mask + b * r.mask_strides[0] + n * r.mask_strides[1] + t * r.mask_strides[2];
}

template <class Fn>
void parallel_attention_rows(const AttentionRows& r, Fn&& fn) {
  const int64_t rows = r.batch * r.heads * r.queries;
  const int64_t grain = std::max<int64_t>(1, kAttentionGrain / r.keys);
  parallel_for(rows, grain, [&](int64_t begin, int64_t end) { fn(begin, end); });
}

}  // namespace

void attention_softmax_forward(const AttentionRows& r, float* scores, float* dropped, Isa isa) {
  const auto softmax_rows = reduce_kernel_table(isa).softmax_rows;
  const int64_t s_len = r.keys, ms = r.mask_strides[3];
  const float scale = r.scale;
  parallel_attention_rows(r, [&](int64_t begin, int64_t end) {
    for_attention_rows(r, begin, end, [&](int64_t row, int64_t b, int64_t n, int64_t t) {
      float* x = scores + row * s_len;
      if (const float* m = attention_mask_row(r, b, n, t); m == nullptr) {
        for (int64_t s = 0; s < s_len; ++s) x[s] *= scale;
      } else if (ms == 1) {
        for (int64_t s = 0; s < s_len; ++s) x[s] = m[s] > 0.5f ? x[s] * scale : kMaskedScore;
      } else {
        for (int64_t s = 0; s < s_len; ++s) x[s] = m[s * ms] > 0.5f ? x[s] * scale : kMaskedScore;
      }
      softmax_rows(x, x, 1, s_len);
      if (r.dropout != nullptr) {
        const float* d = r.dropout + row * s_len;
        float* y = dropped + row * s_len;
        for (int64_t s = 0; s < s_len; ++s) y[s] = x[s] * d[s];
      }
    });
  });
}

void attention_softmax_backward(const AttentionRows& r, const float* probabilities, const float* extra, float* grad,
                                Isa isa) {
  const auto softmax_grad_rows = reduce_kernel_table(isa).softmax_grad_rows;
  const int64_t s_len = r.keys, ms = r.mask_strides[3];
  const float scale = r.scale;
  parallel_attention_rows(r, [&](int64_t begin, int64_t end) {
    for_attention_rows(r, begin, end, [&](int64_t row, int64_t b, int64_t n, int64_t t) {
      float* g = grad + row * s_len;
      if (r.dropout != nullptr) {
        const float* d = r.dropout + row * s_len;
        for (int64_t s = 0; s < s_len; ++s) g[s] *= d[s];
      }
      if (extra != nullptr) {
        const float* e = extra + row * s_len;
        for (int64_t s = 0; s < s_len; ++s) g[s] += e[s];
      }
      // The row kernel reads y[i] and g[i] before writing dx[i], so dx may be g.
      softmax_grad_rows(probabilities + row * s_len, g, g, 1, s_len);
      if (const float* m = attention_mask_row(r, b, n, t); m == nullptr) {
        for (int64_t s = 0; s < s_len; ++s) g[s] *= scale;
      } else {
        for (int64_t s = 0; s < s_len; ++s) g[s] = m[s * ms] > 0.5f ? g[s] * scale : 0.0f;
      }
    });
  });
}

}  // namespace chorus::backend::cpu
