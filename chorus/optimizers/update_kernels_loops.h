// The optimizer update loops, included once by each per-ISA file (update_kernels_<isa>.cc)
// and compiled with that ISA's flags. Everything is in an unnamed namespace so each ISA's
// copy has internal linkage (the linker never swaps an AVX-512 body into the baseline
// path); for the same reason no std:: templates are called here. Loops that need sqrt
// fill a small block buffer and take its root with sqrt_block's intrinsics, because
// errno-setting sqrtf does not vectorise. Pure functions on disjoint ranges; thread-safe.
#pragma once

// No fused multiply-add contraction (GCC contracts a * b + c by default in C++ once -mfma
// is on): every ISA then rounds each operation alike, and replicas or workers on
// different CPUs apply the same all-reduced gradient to bit-identical weights. First in
// the file, so every inline function included below gets the same options. (Clang
// contracts within an expression by default and takes its own pragma.)
#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include <cstdint>

#include "chorus/backend/cpu/vector_math.h"
#include "chorus/optimizers/update_kernels.h"

namespace chorus::optimizers::kernels {
namespace {

using backend::cpu::sqrt_block;

// Elements per sqrt block: 1 KiB of floats, so the block's slots stay in L1 between the
// two passes over it.
constexpr int64_t kBlock = 256;

[[gnu::always_inline]] inline int64_t block_length(int64_t begin, int64_t end) {
  return end - begin < kBlock ? end - begin : kBlock;
}

void sgd_loop(const SgdArgs& a, int64_t begin, int64_t end) {
  float* __restrict var = a.var;
  const float* __restrict g = a.grad;
  const float lr = a.lr, mu = a.momentum_rate;
  if (a.momentum == nullptr) {
    for (int64_t i = begin; i < end; ++i) var[i] -= g[i] * lr;
    return;
  }
  float* __restrict m = a.momentum;
  if (a.nesterov) {
    for (int64_t i = begin; i < end; ++i) {
      const float mi = m[i] * mu - g[i] * lr;
      m[i] = mi;
      var[i] += mi * mu - g[i] * lr;
    }
  } else {
    for (int64_t i = begin; i < end; ++i) {
      const float mi = m[i] * mu - g[i] * lr;
      m[i] = mi;
      var[i] += mi;
    }
  }
}

template <bool kAmsgrad>
void adam_blocks(const AdamArgs& a, int64_t begin, int64_t end) {
  float* __restrict var = a.var;
  float* __restrict m = a.m;
  float* __restrict v = a.v;
  float* __restrict v_hat = a.v_hat;
  const float* __restrict g = a.grad;
  const float b1 = a.one_minus_beta_1, b2 = a.one_minus_beta_2, alpha = a.alpha, eps = a.epsilon;
  alignas(64) float root[kBlock];
  for (int64_t start = begin; start < end; start += kBlock) {
    const int64_t n = block_length(start, end);
    float* __restrict r = root;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = start + i;
      const float gk = g[k];
      const float mk = m[k] + (gk - m[k]) * b1;
      const float vk = v[k] + (gk * gk - v[k]) * b2;
      m[k] = mk;
      v[k] = vk;
      if constexpr (kAmsgrad) {
        const float hk = v_hat[k] > vk ? v_hat[k] : vk;
        v_hat[k] = hk;
        r[i] = hk;
      } else {
        r[i] = vk;
      }
    }
    sqrt_block(r, r, n);
    for (int64_t i = 0; i < n; ++i) var[start + i] -= (m[start + i] * alpha) / (r[i] + eps);
  }
}

void adam_loop(const AdamArgs& a, int64_t begin, int64_t end) {
  if (a.v_hat != nullptr) {
    adam_blocks<true>(a, begin, end);
  } else {
    adam_blocks<false>(a, begin, end);
  }
}

// The dense Adagrad update of [start, start + n), n <= kBlock, with r as scratch.
// Called with a constant n for whole pieces, so those compile to a few full vectors.
[[gnu::always_inline]] inline void adagrad_block(const AdagradArgs& a, int64_t start, int64_t n, float* __restrict r) {
  float* __restrict var = a.var;
  float* __restrict acc = a.accumulator;
  const float* __restrict g = a.grad;
  const float lr = a.lr, eps = a.epsilon;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = start + i;
    const float ak = acc[k] + g[k] * g[k];
    acc[k] = ak;
    r[i] = ak + eps;
  }
  sqrt_block(r, r, n);
  for (int64_t i = 0; i < n; ++i) var[start + i] -= (lr * g[start + i]) / r[i];
}

// adagrad_block, then the gradient it read reset to +0.0 where asked (AdagradArgs);
// outside adagrad_block, whose gradient pointer is __restrict.
[[gnu::always_inline]] inline void adagrad_block_and_reset(const AdagradArgs& a, int64_t start, int64_t n,
                                                           float* __restrict r) {
  adagrad_block(a, start, n, r);
  if (a.reset_grad != nullptr) {
    for (int64_t i = 0; i < n; ++i) a.reset_grad[start + i] = 0.0f;
  }
}

// Whether g[begin, begin + n) is all +0.0 (bit pattern 0: -0.0 and NaN are not).
[[gnu::always_inline]] inline bool all_positive_zero(const float* __restrict g, int64_t begin, int64_t n) {
  uint32_t bits = 0;
  for (int64_t i = 0; i < n; ++i) bits |= __builtin_bit_cast(uint32_t, g[begin + i]);
  return bits == 0;
}

// The same for one whole piece, with the ISA's vector test (GCC reduces the OR above
// lane by lane).
[[gnu::always_inline]] inline bool piece_is_zero(const float* g) {
  static_assert(kAdagradPiece == 32);
#if defined(__AVX512F__)
  const __m512i x = _mm512_or_si512(_mm512_loadu_si512(g), _mm512_loadu_si512(g + 16));
  return _mm512_test_epi32_mask(x, x) == 0;
#elif defined(__AVX2__)
  const __m256i x = _mm256_or_si256(
      _mm256_or_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g)),
                      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + 8))),
      _mm256_or_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + 16)),
                      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + 24))));
  return _mm256_testz_si256(x, x) != 0;
#else
  __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g));
  for (int i = 4; i < 32; i += 4) x = _mm_or_si128(x, _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + i)));
  return _mm_movemask_epi8(_mm_cmpeq_epi32(x, _mm_setzero_si128())) == 0xffff;
#endif
}

// Pieces listed per pass of adagrad_loop's skipping path.
constexpr int64_t kPiecesPerPass = 256;

void adagrad_loop(const AdagradArgs& a, int64_t begin, int64_t end) {
  alignas(64) float root[kBlock];
  if (!a.skip_zero_pieces) {
    for (int64_t start = begin; start < end; start += kBlock) {
      adagrad_block_and_reset(a, start, block_length(start, end), root);
    }
    return;
  }
  // Pieces are aligned to multiples of kAdagradPiece from element 0, whatever the chunk:
  // only the chunk's first and last piece can be partial, and go element by element.
  const int64_t first = (begin + kAdagradPiece - 1) / kAdagradPiece * kAdagradPiece;
  const int64_t last = end / kAdagradPiece * kAdagradPiece;
  if (first > last) {  // inside one piece
    if (!all_positive_zero(a.grad, begin, end - begin)) adagrad_block_and_reset(a, begin, end - begin, root);
    return;
  }
  if (!all_positive_zero(a.grad, begin, first - begin)) adagrad_block_and_reset(a, begin, first - begin, root);
  if (!all_positive_zero(a.grad, last, end - last)) adagrad_block_and_reset(a, last, end - last, root);
  // Whole pieces: list the non-zero ones without a branch (which are zero is data, and
  // mispredicting it cost more than the update saved), then update the listed ones.
  int64_t listed[kPiecesPerPass];
  for (int64_t pass = first; pass < last; pass += kPiecesPerPass * kAdagradPiece) {
    constexpr int64_t kPassLength = kPiecesPerPass * kAdagradPiece;
    const int64_t pass_end = last - pass < kPassLength ? last : pass + kPassLength;
    int64_t count = 0;
    for (int64_t p = pass; p < pass_end; p += kAdagradPiece) {
      listed[count] = p;
      count += piece_is_zero(a.grad + p) ? 0 : 1;
    }
    for (int64_t i = 0; i < count; ++i) adagrad_block_and_reset(a, listed[i], kAdagradPiece, root);
  }
}

// sums = the gradient of groups [begin, end), (end - begin) rows of `width` floats: the
// gradient rows added onto +0.0 in position order, a group's first row selecting +0.0
// over what `sums` held. One pass over the positions with no data-dependent branch
// (walking each group's positions mispredicts its every end) and no zero-fill.
void sum_groups(const RowGroups& groups, int64_t begin, int64_t end, float* __restrict sums) {
  const int64_t width = groups.width;
  for (int64_t p = 0; p < groups.positions; ++p) {
    const int64_t placed = groups.place[p];
    const bool first = placed < 0;
    const int64_t g = first ? ~placed : placed;
    if (g < begin || g >= end) continue;  // another thread's groups: the same branch throughout
    float* __restrict sum = sums + (g - begin) * width;
    const float* __restrict row = groups.values + p * width;
    if (width == kAdagradPiece) {
      for (int64_t j = 0; j < kAdagradPiece; ++j) sum[j] = (first ? 0.0f : sum[j]) + row[j];
    } else {
      for (int64_t j = 0; j < width; ++j) sum[j] = (first ? 0.0f : sum[j]) + row[j];
    }
  }
}

// The dense Adagrad update of `rows` groups of kWidth floats at once (at most kBlock
// floats in all), their summed gradients at `sum`: each phase runs over the whole block,
// so the rows' sqrt and division latencies overlap, as in the dense loop.
template <int64_t kWidth>
void adagrad_group_block(const AdagradArgs& a, const int64_t* rows_of, int64_t rows, const float* __restrict sum,
                         float* __restrict root) {
  for (int64_t k = 0; k < rows; ++k) {
    float* __restrict acc = a.accumulator + rows_of[k] * kWidth;
    const float* __restrict g = sum + k * kWidth;
    float* __restrict r = root + k * kWidth;
    for (int64_t j = 0; j < kWidth; ++j) {
      const float aj = acc[j] + g[j] * g[j];
      acc[j] = aj;
      r[j] = aj + a.epsilon;
    }
  }
  sqrt_block(root, root, rows * kWidth);
  for (int64_t k = 0; k < rows; ++k) {
    float* __restrict var = a.var + rows_of[k] * kWidth;
    const float* __restrict g = sum + k * kWidth;
    const float* __restrict r = root + k * kWidth;
    for (int64_t j = 0; j < kWidth; ++j) var[j] -= (a.lr * g[j]) / r[j];
  }
}

void adagrad_groups_loop(const AdagradArgs& a, const RowGroups& groups, int64_t begin, int64_t end, float* sums) {
  alignas(64) float root[kBlock];
  const int64_t width = groups.width;
  sum_groups(groups, begin, end, sums);
  if (width == kAdagradPiece) {  // a constant width: full vectors, no remainder loops
    constexpr int64_t kRows = kBlock / kAdagradPiece;
    for (int64_t g = begin; g < end; g += kRows) {
      adagrad_group_block<kAdagradPiece>(a, groups.rows + g, end - g < kRows ? end - g : kRows,
                                         sums + (g - begin) * width, root);
    }
    return;
  }
  for (int64_t g = begin; g < end; ++g) {
    const int64_t offset = groups.rows[g] * width;
    for (int64_t column = 0; column < width; column += kBlock) {
      const AdagradArgs block{.var = a.var + offset + column,
                              .accumulator = a.accumulator + offset + column,
                              .grad = sums + (g - begin) * width + column,
                              .lr = a.lr,
                              .epsilon = a.epsilon};
      adagrad_block(block, 0, block_length(column, width), root);
    }
  }
}

// Each group's row through sgd_loop itself, so its bits are the dense update's.
void sgd_groups_loop(const SgdArgs& a, const RowGroups& groups, int64_t begin, int64_t end, float* sums) {
  sum_groups(groups, begin, end, sums);
  for (int64_t g = begin; g < end; ++g) {
    const SgdArgs row{.var = a.var + groups.rows[g] * groups.width,
                      .momentum = nullptr,
                      .grad = sums + (g - begin) * groups.width,
                      .lr = a.lr,
                      .momentum_rate = 0.0f,
                      .nesterov = false};
    sgd_loop(row, 0, groups.width);
  }
}

template <bool kCentered, bool kMomentum>
void rmsprop_blocks(const RmspropArgs& a, int64_t begin, int64_t end) {
  float* __restrict var = a.var;
  float* __restrict vel = a.velocity;
  float* __restrict mom = a.momentum;
  float* __restrict avg = a.average_gradient;
  const float* __restrict g = a.grad;
  const float lr = a.lr, rho = a.rho, one_minus_rho = a.one_minus_rho, mu = a.momentum_rate, eps = a.epsilon;
  alignas(64) float root[kBlock];
  for (int64_t start = begin; start < end; start += kBlock) {
    const int64_t n = block_length(start, end);
    float* __restrict r = root;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = start + i;
      const float gk = g[k];
      const float vk = rho * vel[k] + one_minus_rho * (gk * gk);
      vel[k] = vk;
      if constexpr (kCentered) {
        const float ak = rho * avg[k] + one_minus_rho * gk;
        avg[k] = ak;
        r[i] = vk - ak * ak + eps;
      } else {
        r[i] = vk + eps;
      }
    }
    sqrt_block(r, r, n);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = start + i;
      const float increment = (lr * g[k]) / r[i];
      if constexpr (kMomentum) {
        const float mk = mu * mom[k] + increment;
        mom[k] = mk;
        var[k] -= mk;
      } else {
        var[k] -= increment;
      }
    }
  }
}

void rmsprop_loop(const RmspropArgs& a, int64_t begin, int64_t end) {
  const bool centered = a.average_gradient != nullptr, momentum = a.momentum != nullptr;
  if (centered && momentum) {
    rmsprop_blocks<true, true>(a, begin, end);
  } else if (centered) {
    rmsprop_blocks<true, false>(a, begin, end);
  } else if (momentum) {
    rmsprop_blocks<false, true>(a, begin, end);
  } else {
    rmsprop_blocks<false, false>(a, begin, end);
  }
}

void weight_decay_loop(float* var_in, int64_t begin, int64_t end, float wd, float lr) {
  float* __restrict var = var_in;
  for (int64_t i = begin; i < end; ++i) var[i] = var[i] - var[i] * wd * lr;
}

// x and out may be the same array, so no __restrict here.
void scale_loop(const float* x, float* out, int64_t begin, int64_t end, float factor) {
  for (int64_t i = begin; i < end; ++i) out[i] = x[i] * factor;
}

void clip_loop(const float* x, float* out, int64_t begin, int64_t end, float limit) {
  for (int64_t i = begin; i < end; ++i) {
    const float lo = x[i] < -limit ? -limit : x[i];
    out[i] = lo > limit ? limit : lo;
  }
}

// Eight explicit double lanes: a vectorisable sum without reassociating one accumulator.
double sum_of_squares_loop(const float* x_in, int64_t begin, int64_t end) {
  const float* __restrict x = x_in;
  double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    for (int l = 0; l < 8; ++l) lanes[l] += static_cast<double>(x[i + l]) * static_cast<double>(x[i + l]);
  }
  double total = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  for (; i < end; ++i) total += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return total;
}

constexpr UpdateTable make_update_table() {
  return UpdateTable{.sgd = sgd_loop,
                     .sgd_groups = sgd_groups_loop,
                     .adam = adam_loop,
                     .adagrad = adagrad_loop,
                     .adagrad_groups = adagrad_groups_loop,
                     .rmsprop = rmsprop_loop,
                     .weight_decay = weight_decay_loop,
                     .scale = scale_loop,
                     .clip = clip_loop,
                     .sum_of_squares = sum_of_squares_loop};
}

}  // namespace
}  // namespace chorus::optimizers::kernels
