// Loop bodies of the reduction and softmax leaf kernels, written once over the native
// vector width kBytes (16: SSE2, 32: AVX2, 64: AVX-512) with GCC vector extensions.
// Included only by reduce_kernels_{baseline,avx2,avx512}.cc, each compiled for its ISA.
// Everything here has internal linkage and calls only builtins, so the linker can never
// hand code compiled for a newer ISA to an older CPU. Float sums use 64 logical lanes
// whatever the width, so they give the same bits on every ISA.
#pragma once

#include <cstdint>
#include <cstring>

#include "chorus/backend/cpu/reduce_kernels_isa.h"

namespace chorus::backend::cpu {
namespace {

constexpr float kInf = __builtin_inff();

inline float to_float(float v) { return v; }
inline float to_float(bfloat16 v) {
  const uint32_t bits = uint32_t{v.bits} << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Largest power of two <= v. REQUIRES: v >= 1.
inline int64_t floor_pow2(int64_t v) { return int64_t{1} << (63 - __builtin_clzll(static_cast<uint64_t>(v))); }

// NaN-sticky extreme that keeps the first of equal values: associative, so folding
// chunks in order gives the same bits however the chunks are cut.
template <bool kMax>
inline float pick(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return (kMax ? b > a : b < a) ? b : a;
}

// uint16 vectors of half a register (bfloat16 loads). Spelled out per size: GCC 12
// rejects __builtin_convertvector on a vector_size that depends on a template parameter.
typedef uint16_t U16x4 __attribute__((vector_size(8)));
typedef uint16_t U16x8 __attribute__((vector_size(16)));
typedef uint16_t U16x16 __attribute__((vector_size(32)));
template <int kBytes> struct HalfVector;
template <> struct HalfVector<16> { using type = U16x4; };
template <> struct HalfVector<32> { using type = U16x8; };
template <> struct HalfVector<64> { using type = U16x16; };

template <int kBytes>
struct Simd {
  typedef float F __attribute__((vector_size(kBytes)));
  typedef int32_t I __attribute__((vector_size(kBytes)));
  typedef uint32_t U __attribute__((vector_size(kBytes)));
  using H = typename HalfVector<kBytes>::type;
  static constexpr int kLanes = kBytes / 4;
  static constexpr int kPer64 = 64 / kLanes;  // vectors per 64 logical lanes

  static F splat(float v) { return F{} + v; }
  static F load(const float* p) {
    F v;
    std::memcpy(&v, p, kBytes);
    return v;
  }
  static F load(const bfloat16* p) {
    H h;
    std::memcpy(&h, p, kBytes / 2);
    const U wide = __builtin_convertvector(h, U) << 16;
    F v;
    std::memcpy(&v, &wide, kBytes);
    return v;
  }
  // The first n < kLanes elements, the other lanes `fill`.
  template <class T>
  static F load_partial(const T* p, int64_t n, float fill) {
    float buf[kLanes];
    for (int j = 0; j < kLanes; ++j) buf[j] = j < n ? to_float(p[j]) : fill;
    return load(buf);
  }
  static void store(float* p, F v) { std::memcpy(p, &v, kBytes); }
  // The first n <= kLanes lanes rounded to bfloat16 as bfloat16(float) rounds: to nearest,
  // ties to even; a NaN stays a quiet NaN.
  static void store(bfloat16* p, F v) { store_partial(p, v, kLanes); }
  static void store_partial(bfloat16* p, F v, int64_t n) {
    U bits;
    std::memcpy(&bits, &v, kBytes);
    const U rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    const U out = (bits & 0x7fffffffu) > 0x7f800000u ? (bits >> 16) | 0x40u : rounded;
    const H half = __builtin_convertvector(out, H);
    std::memcpy(static_cast<void*>(p), &half, static_cast<size_t>(n) * 2);
  }
  static void store_partial(float* p, F v, int64_t n) {
    float buf[kLanes];
    store(buf, v);
    for (int64_t j = 0; j < n; ++j) p[j] = buf[j];
  }
  static float hsum(F v) {
    float buf[kLanes];
    store(buf, v);
    for (int w = kLanes / 2; w >= 1; w /= 2) {
      for (int j = 0; j < w; ++j) buf[j] += buf[j + w];
    }
    return buf[0];
  }
  template <bool kMax>
  static F update(F m, F v) {
    if constexpr (kMax) {
      return ((v > m) | (v != v)) ? v : m;
    } else {
      return ((v < m) | (v != v)) ? v : m;
    }
  }
};

// ---- sums: the fixed pairwise tree --------------------------------------------------

// 64 interleaved lanes (lane l sums elements l, l + 64, ...), then a halving tree;
// fewer than 64 elements (the last leaf of a long row) are summed in order.
template <int B, class T>
float sum_leaf(const T* x, int64_t n) {
  if (n < 64) {  // short rows: in order (the same code, so the same bits, on every ISA)
    float s = 0.f;
    for (int64_t i = 0; i < n; ++i) s += to_float(x[i]);
    return s;
  }
  using S = Simd<B>;
  typename S::F acc[S::kPer64];
  for (auto& a : acc) a = typename S::F{};
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int v = 0; v < S::kPer64; ++v) acc[v] += S::load(x + i + v * S::kLanes);
  }
  if (i < n) {
    float tail[64] = {};
    for (int64_t j = i; j < n; ++j) tail[j - i] = to_float(x[j]);
    for (int v = 0; v < S::kPer64; ++v) acc[v] += S::load(tail + v * S::kLanes);
  }
  float lanes[64];
  for (int v = 0; v < S::kPer64; ++v) S::store(lanes + v * S::kLanes, acc[v]);
  for (int w = 32; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) lanes[j] += lanes[j + w];
  }
  return lanes[0];
}

template <int B, class T>
float sum_tree(const T* x, int64_t n) {
  if (n <= kSumLeaf) return sum_leaf<B>(x, n);
  const int64_t left = floor_pow2((n + kSumLeaf - 1) / kSumLeaf - 1) * kSumLeaf;
  return sum_tree<B>(x, left) + sum_tree<B>(x + left, n - left);
}

}  // namespace
}  // namespace chorus::backend::cpu

// Short-row sums and row broadcasts; they use Simd and to_float from above.
#include "chorus/backend/cpu/reduce_kernels_rows.h"

namespace chorus::backend::cpu {
namespace {

// out[j] = sum over r < rows of x[r * stride + j], in row order. REQUIRES: width <= 64.
template <int B, class T>
void sum_columns_leaf(const T* x, int64_t rows, int64_t stride, int64_t width, float* out) {
  using S = Simd<B>;
  constexpr int L = S::kLanes;
  typename S::F acc[S::kPer64];
  for (auto& a : acc) a = typename S::F{};
  if (width == 64) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int v = 0; v < S::kPer64; ++v) acc[v] += S::load(x + r * stride + v * L);
    }
  } else {
    const int64_t full = width / L, rem = width % L;
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = x + r * stride;
      for (int64_t v = 0; v < full; ++v) acc[v] += S::load(row + v * L);
      if (rem != 0) acc[full] += S::load_partial(row + full * L, rem, 0.f);
    }
  }
  float lanes[64];
  for (int v = 0; v < S::kPer64; ++v) S::store(lanes + v * L, acc[v]);
  for (int64_t j = 0; j < width; ++j) out[j] = lanes[j];
}

// The same over up to kWideColumns columns, on the fixed tree over rows. A leaf walks
// its kRowLeaf rows once per 64-column tile, accumulating in registers; per column the
// adds are those of one sequential leaf, so the bits do not depend on the tiling.
// (Row-major leaves with accumulators in L1 measured slower: 16 KB row strides alias
// in the cache, and whole-row accumulators would need more scratch than the stack.)
template <int B, class T>
void sum_columns_tree(const T* x, int64_t rows, int64_t stride, int64_t width, float* out) {
  if (rows <= kRowLeaf) {
    for (int64_t c = 0; c < width; c += 64) {
      sum_columns_leaf<B>(x + c, rows, stride, width - c < 64 ? width - c : 64, out + c);
    }
    return;
  }
  const int64_t left = floor_pow2((rows + kRowLeaf - 1) / kRowLeaf - 1) * kRowLeaf;
  sum_columns_tree<B>(x, left, stride, width, out);
  float right[kWideColumns];
  sum_columns_tree<B>(x + left * stride, rows - left, stride, width, right);
  for (int64_t j = 0; j < width; ++j) out[j] += right[j];
}

// ---- max / min -----------------------------------------------------------------------

template <int B, bool kMax, class T>
float extreme_run(const T* x, int64_t n) {
  using S = Simd<B>;
  constexpr int L = S::kLanes;
  float r = to_float(x[0]);
  int64_t i = 1;
  if (n >= 4 * L) {
    const typename S::F init = S::splat(kMax ? -kInf : kInf);
    typename S::F acc[4] = {init, init, init, init};
    for (i = 0; i + 4 * L <= n; i += 4 * L) {
      for (int v = 0; v < 4; ++v) acc[v] = S::template update<kMax>(acc[v], S::load(x + i + v * L));
    }
    for (; i + L <= n; i += L) acc[0] = S::template update<kMax>(acc[0], S::load(x + i));
    acc[0] = S::template update<kMax>(S::template update<kMax>(acc[0], acc[1]), S::template update<kMax>(acc[2], acc[3]));
    float lanes[L];
    S::store(lanes, acc[0]);
    r = lanes[0];
    for (int j = 1; j < L; ++j) r = pick<kMax>(r, lanes[j]);
  }
  for (; i < n; ++i) r = pick<kMax>(r, to_float(x[i]));
  return r;
}

// Folds leaf results in order, so chunks of whole leaves combine to the same bits.
template <int B, bool kMax, class T>
float extreme_row(const T* x, int64_t n) {
  float r = extreme_run<B, kMax>(x, n < kSumLeaf ? n : kSumLeaf);
  for (int64_t i = kSumLeaf; i < n; i += kSumLeaf) {
    r = pick<kMax>(r, extreme_run<B, kMax>(x + i, n - i < kSumLeaf ? n - i : kSumLeaf));
  }
  return r;
}

// out[j] = extreme over rows of x[r * stride + j], j < width <= 64, folded into the
// current out[j] when `accumulate`.
template <int B, bool kMax, class T>
void extreme_tile(const T* x, int64_t rows, int64_t stride, int64_t width, float* out, bool accumulate) {
  using S = Simd<B>;
  constexpr int L = S::kLanes;
  typename S::F acc[S::kPer64];
  for (int v = 0; v < S::kPer64; ++v) {
    const int64_t have = width - v * L;
    if (!accumulate || have <= 0) {
      acc[v] = S::splat(kMax ? -kInf : kInf);
    } else {
      acc[v] = have >= L ? S::load(out + v * L) : S::load_partial(out + v * L, have, 0.f);
    }
  }
  if (width == 64) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int v = 0; v < S::kPer64; ++v) acc[v] = S::template update<kMax>(acc[v], S::load(x + r * stride + v * L));
    }
  } else {
    const int64_t full = width / L, rem = width % L;
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = x + r * stride;
      for (int64_t v = 0; v < full; ++v) acc[v] = S::template update<kMax>(acc[v], S::load(row + v * L));
      if (rem != 0) acc[full] = S::template update<kMax>(acc[full], S::load_partial(row + full * L, rem, 0.f));
    }
  }
  float lanes[64];
  for (int v = 0; v < S::kPer64; ++v) S::store(lanes + v * L, acc[v]);
  for (int64_t j = 0; j < width; ++j) out[j] = lanes[j];
}

// Blocks of kRowLeaf rows, each walked once per 64-column tile (as sum_columns_tree).
template <int B, bool kMax, class T>
void extreme_columns(const T* x, int64_t rows, int64_t stride, int64_t width, float* out) {
  for (int64_t r = 0; r < rows; r += kRowLeaf) {
    const int64_t n = rows - r < kRowLeaf ? rows - r : kRowLeaf;
    for (int64_t c = 0; c < width; c += 64) {
      extreme_tile<B, kMax>(x + r * stride + c, n, stride, width - c < 64 ? width - c : 64, out + c, r > 0);
    }
  }
}

template <int B, class T>
void reduce_contiguous(ReduceKind kind, const T* x, int64_t rows, int64_t n, float* out) {
  if (kind == ReduceKind::kSum && n < kShortRow) {
    sum_short_rows<B>(x, rows, n, out);
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * n;
    switch (kind) {
      case ReduceKind::kSum: out[r] = sum_tree<B>(row, n); break;
      case ReduceKind::kMax: out[r] = extreme_row<B, true>(row, n); break;
      case ReduceKind::kMin: out[r] = extreme_row<B, false>(row, n); break;
    }
  }
}

template <int B, class T>
void reduce_strided(ReduceKind kind, const T* x, int64_t rows, int64_t stride, int64_t width, float* out) {
  for (int64_t c = 0; c < width; c += kWideColumns) {
    const int64_t w = width - c < kWideColumns ? width - c : kWideColumns;
    switch (kind) {
      case ReduceKind::kSum: sum_columns_tree<B>(x + c, rows, stride, w, out + c); break;
      case ReduceKind::kMax: extreme_columns<B, true>(x + c, rows, stride, w, out + c); break;
      case ReduceKind::kMin: extreme_columns<B, false>(x + c, rows, stride, w, out + c); break;
    }
  }
}

// ---- exp and the softmax rows --------------------------------------------------------

// Cephes-style expf: round(x / ln 2) by the 1.5 * 2^23 trick, a degree-6 polynomial on
// the remainder, and the power of two built in the exponent bits. About 1 ulp for
// arguments in [-87.3, 88.37]; 0 below, +inf above, NaN stays NaN. The softmax family
// only calls it on arguments <= 0.
template <int B>
[[gnu::always_inline]] inline typename Simd<B>::F exp_vec(typename Simd<B>::F x) {
  using S = Simd<B>;
  using F = typename S::F;
  const F hi = S::splat(88.3762626647949f), lo = S::splat(-87.3365447504f);
  F xc = x > hi ? hi : x;
  xc = xc < lo ? lo : xc;
  xc = x != x ? S::splat(0.f) : xc;
  const F magic = S::splat(12582912.f);
  const F n = (xc * 1.44269504088896341f + magic) - magic;
  F r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  F p = S::splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.f;
  const typename S::U bits = __builtin_convertvector(__builtin_convertvector(n, typename S::I) + 127, typename S::U)
                             << 23;
  F scale;
  std::memcpy(&scale, &bits, B);
  F y = p * scale;
  y = x > hi ? S::splat(kInf) : y;
  y = x < lo ? S::splat(0.f) : y;
  return x != x ? x : y;
}

// sum(exp(x - shift)), storing the terms in y when kStore.
template <int B, bool kStore, class T>
float exp_sum(const T* x, float* y, int64_t n, float shift) {
  using S = Simd<B>;
  constexpr int L = S::kLanes;
  const typename S::F s = S::splat(shift);
  typename S::F acc0{}, acc1{};
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const auto e0 = exp_vec<B>(S::load(x + i) - s), e1 = exp_vec<B>(S::load(x + i + L) - s);
    if constexpr (kStore) {
      S::store(y + i, e0);
      S::store(y + i + L, e1);
    }
    acc0 += e0;
    acc1 += e1;
  }
  for (; i < n; i += L) {
    const int64_t len = n - i < L ? n - i : L;
    const auto e = exp_vec<B>((len == L ? S::load(x + i) : S::load_partial(x + i, len, -kInf)) - s);
    if constexpr (kStore) S::store_partial(y + i, e, len);
    acc0 += e;
  }
  return S::hsum(acc0 + acc1);
}

// y[i] = x[i] * a.
template <int B>
void scale(const float* x, float* y, int64_t n, float a) {
  using S = Simd<B>;
  int64_t i = 0;
  for (; i + S::kLanes <= n; i += S::kLanes) S::store(y + i, S::load(x + i) * a);
  for (; i < n; ++i) y[i] = x[i] * a;
}

// y[i] = (x[i] - a) - b.
template <int B>
void shift_twice(const float* x, float* y, int64_t n, float a, float b) {
  using S = Simd<B>;
  int64_t i = 0;
  for (; i + S::kLanes <= n; i += S::kLanes) S::store(y + i, (S::load(x + i) - a) - b);
  for (; i < n; ++i) y[i] = (x[i] - a) - b;
}

template <int B>
void softmax_rows(const float* x, float* y, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
    const float m = extreme_run<B, true>(x, n);
    const float total = exp_sum<B, true>(x, y, n, m);
    scale<B>(y, y, n, 1.f / total);
  }
}

template <int B>
void log_softmax_rows(const float* x, float* y, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
    // (x - m) - log(s), not x - (m + log(s)): for inputs near 1000 the float m + log(s)
    // would lose the low bits of log(s).
    const float m = extreme_run<B, true>(x, n);
    const float log_total = __builtin_logf(exp_sum<B, false>(x, nullptr, n, m));
    shift_twice<B>(x, y, n, m, log_total);
  }
}

template <int B>
void logsumexp_rows(const float* x, float* out, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r, x += n) {
    const float m = extreme_run<B, true>(x, n);
    // An infinite or NaN maximum is the answer itself (an all -inf row gives -inf).
    out[r] = m - m != 0.f ? m : m + __builtin_logf(exp_sum<B, false>(x, nullptr, n, m));
  }
}

// loss[r] = log(s) - (x[r, label[r]] - m), with m the row's max and s = sum(exp(x - m)):
// TensorFlow's order, exact for logits near 1000. Keeps m and s for the backward.
template <int B, class T>
void sparse_cross_entropy_rows(const T* x, const int64_t* labels, int64_t rows, int64_t n, float* loss, float* max,
                               float* sum) {
  for (int64_t r = 0; r < rows; ++r, x += n) {
    const float m = extreme_run<B, true>(x, n);
    const float s = exp_sum<B, false>(x, nullptr, n, m);
    loss[r] = __builtin_logf(s) - (to_float(x[labels[r]]) - m);
    max[r] = m;
    sum[r] = s;
  }
}

// dx[r, i] = g[r] * (exp(x[r, i] - max[r]) / sum[r] - (i == labels[r])), in float32 and
// stored once in T (bfloat16 rounds once, as a float32 gradient cast to it would).
template <int B, class T>
void sparse_cross_entropy_grad_rows(const T* x, const int64_t* labels, const float* max, const float* sum,
                                    const float* g, T* dx, int64_t rows, int64_t n) {
  using S = Simd<B>;
  constexpr int L = S::kLanes;
  for (int64_t r = 0; r < rows; ++r, x += n, dx += n) {
    const float scale = g[r] / sum[r];
    const typename S::F shift = S::splat(max[r]);
    const bool dead = max[r] == -kInf;  // an all -inf row: exp gives 0, not NaN
    for (int64_t i = 0; i < n; i += L) {
      const int64_t len = n - i < L ? n - i : L;
      const auto xv = len == L ? S::load(x + i) : S::load_partial(x + i, len, 0.f);
      typename S::F e = dead ? S::splat(0.f) : exp_vec<B>(xv - shift) * scale;
      if (labels[r] >= i && labels[r] < i + len) {
        float lanes[L];
        S::store(lanes, e);
        lanes[labels[r] - i] -= g[r];
        e = S::load(lanes);
      }
      if (len == L) {
        S::store(dx + i, e);
      } else {
        S::store_partial(dx + i, e, len);
      }
    }
  }
}

template <int B>
void softmax_grad_rows(const float* y, const float* g, float* dx, int64_t rows, int64_t n) {
  using S = Simd<B>;
  constexpr int L = S::kLanes;
  for (int64_t r = 0; r < rows; ++r, y += n, g += n, dx += n) {
    typename S::F acc{};
    int64_t i = 0;
    for (; i + L <= n; i += L) acc += S::load(g + i) * S::load(y + i);
    float dot = S::hsum(acc);
    for (; i < n; ++i) dot += g[i] * y[i];
    for (i = 0; i + L <= n; i += L) S::store(dx + i, S::load(y + i) * (S::load(g + i) - dot));
    for (; i < n; ++i) dx[i] = y[i] * (g[i] - dot);
  }
}

template <int B>
void log_softmax_grad_rows(const float* y, const float* g, float* dx, int64_t rows, int64_t n) {
  using S = Simd<B>;
  constexpr int L = S::kLanes;
  for (int64_t r = 0; r < rows; ++r, y += n, g += n, dx += n) {
    typename S::F acc{};
    int64_t i = 0;
    for (; i + L <= n; i += L) acc += S::load(g + i);
    float total = S::hsum(acc);
    for (; i < n; ++i) total += g[i];
    for (i = 0; i < n; i += L) {
      const int64_t len = n - i < L ? n - i : L;
      const auto gv = len == L ? S::load(g + i) : S::load_partial(g + i, len, 0.f);
      const auto yv = len == L ? S::load(y + i) : S::load_partial(y + i, len, 0.f);
      S::store_partial(dx + i, gv - exp_vec<B>(yv) * total, len);
    }
  }
}

template <int B>
void exp_shift_scale(const float* x, float* dx, int64_t n, float shift, float scale) {
  using S = Simd<B>;
  constexpr int L = S::kLanes;
  if (shift == -kInf) {
    for (int64_t i = 0; i < n; ++i) dx[i] = 0.f;
    return;
  }
  const typename S::F s = S::splat(shift);
  for (int64_t i = 0; i < n; i += L) {
    const int64_t len = n - i < L ? n - i : L;
    const auto xv = len == L ? S::load(x + i) : S::load_partial(x + i, len, 0.f);
    S::store_partial(dx + i, exp_vec<B>(xv - s) * scale, len);
  }
}

template <int B>
void exp_shift_scale_each(const float* x, float* dx, int64_t n, const float* shift, const float* scale) {
  using S = Simd<B>;
  constexpr int L = S::kLanes;
  for (int64_t i = 0; i < n; i += L) {
    const int64_t len = n - i < L ? n - i : L;
    const bool full = len == L;
    const auto xv = full ? S::load(x + i) : S::load_partial(x + i, len, 0.f);
    const auto sv = full ? S::load(shift + i) : S::load_partial(shift + i, len, 0.f);
    const auto cv = full ? S::load(scale + i) : S::load_partial(scale + i, len, 0.f);
    const auto e = exp_vec<B>(xv - sv) * cv;
    S::store_partial(dx + i, sv == S::splat(-kInf) ? S::splat(0.f) : e, len);
  }
}

// ---- argmax along rows ------------------------------------------------------------------

// The first index of the largest of x[i..n), or of the first NaN, in order.
template <class T>
int64_t argmax_in_order(const T* x, int64_t n, int64_t best, int64_t i) {
  float best_value = to_float(x[best]);
  if (best_value != best_value) return best;
  for (; i < n; ++i) {
    const float v = to_float(x[i]);
    if (v != v) return i;
    if (v > best_value) {
      best_value = v;
      best = i;
    }
  }
  return best;
}

// The first index of the row's largest element, or of its first NaN. Each lane keeps its
// largest value and the first index that reached it (a strict > never moves on to a later
// equal value); the lanes then give the smallest index among equal values. A row holding
// a NaN is rescanned in order: comparisons skip NaNs, and NaN logits are rare.
template <int B, class T>
int64_t argmax_row(const T* x, int64_t n) {
  using S = Simd<B>;
  constexpr int L = S::kLanes;
  if (n < 2 * L || n > INT32_MAX) return argmax_in_order(x, n, 0, 1);
  typename S::F m = S::load(x);
  typename S::I at{}, nan = m != m;
  for (int j = 0; j < L; ++j) at[j] = j;
  typename S::I where = at;
  int64_t i = L;
  for (; i + L <= n; i += L) {
    const typename S::F v = S::load(x + i);
    at += L;
    const typename S::I greater = v > m;
    nan |= v != v;
    m = greater ? v : m;
    where = greater ? at : where;
  }
  int64_t best = where[0];
  for (int j = 0; j < L; ++j) {
    if (nan[j] != 0) return argmax_in_order(x, n, 0, 1);
  }
  float best_value = to_float(x[best]);
  for (int j = 1; j < L; ++j) {
    if (m[j] > best_value || (m[j] == best_value && where[j] < best)) {
      best_value = m[j];
      best = where[j];
    }
  }
  return argmax_in_order(x, n, best, i);
}

template <int B, class T>
void argmax_rows(const T* x, int64_t rows, int64_t n, int64_t* out) {
  for (int64_t r = 0; r < rows; ++r, x += n) out[r] = argmax_row<B>(x, n);
}

template <int B>
constexpr ReduceKernelTable make_reduce_table() {
  return ReduceKernelTable{
      .reduce_contiguous_f32 = &reduce_contiguous<B, float>,
      .reduce_contiguous_bf16 = &reduce_contiguous<B, bfloat16>,
      .reduce_strided_f32 = &reduce_strided<B, float>,
      .reduce_strided_bf16 = &reduce_strided<B, bfloat16>,
      .softmax_rows = &softmax_rows<B>,
      .log_softmax_rows = &log_softmax_rows<B>,
      .logsumexp_rows = &logsumexp_rows<B>,
      .sparse_cross_entropy_rows_f32 = &sparse_cross_entropy_rows<B, float>,
      .sparse_cross_entropy_rows_bf16 = &sparse_cross_entropy_rows<B, bfloat16>,
      .sparse_cross_entropy_grad_rows_f32 = &sparse_cross_entropy_grad_rows<B, float>,
      .sparse_cross_entropy_grad_rows_bf16 = &sparse_cross_entropy_grad_rows<B, bfloat16>,
      .softmax_grad_rows = &softmax_grad_rows<B>,
      .log_softmax_grad_rows = &log_softmax_grad_rows<B>,
      .exp_shift_scale = &exp_shift_scale<B>,
      .exp_shift_scale_each = &exp_shift_scale_each<B>,
      .broadcast_rows32 = &broadcast_rows32<B>,
      .argmax_rows_f32 = &argmax_rows<B, float>,
      .argmax_rows_bf16 = &argmax_rows<B, bfloat16>,
  };
}

}  // namespace
}  // namespace chorus::backend::cpu
