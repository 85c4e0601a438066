// The elementwise loops, written once as templates over (op, dtype, layout) and compiled
// by each ISA file (elementwise_kernels_{baseline,avx2,avx512}.cc) with its own flags:
// make_kernel_table() instantiates every supported combination. Loop bodies are
// branch-free scalar code that GCC -O3 auto-vectorises (sqrt uses intrinsics, power calls
// libm's pow per element). Everything is in an unnamed namespace: see vector_math.h.
// Thread-safe: pure functions over caller-owned buffers.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "chorus/backend/cpu/elementwise_table.h"
#include "chorus/backend/cpu/vector_math.h"

namespace chorus::backend::cpu {
namespace {

// Storage element of each dtype inside the kernels; bfloat16 is its raw bits.
template <DType D> struct StorageOfT;
template <> struct StorageOfT<DType::kFloat32> { using type = float; };
template <> struct StorageOfT<DType::kBFloat16> { using type = uint16_t; };
template <> struct StorageOfT<DType::kInt32> { using type = int32_t; };
template <> struct StorageOfT<DType::kInt64> { using type = int64_t; };
template <> struct StorageOfT<DType::kBool> { using type = uint8_t; };
template <> struct StorageOfT<DType::kUInt8> { using type = uint8_t; };  // bool's type: cast tells them apart by DType
template <DType D> using StorageOf = typename StorageOfT<D>::type;

// The type arithmetic happens in: bfloat16 computes in float32.
template <class S> using ComputeOf = std::conditional_t<std::is_same_v<S, uint16_t>, float, S>;
template <class S> inline constexpr bool kIsFloat = std::is_same_v<ComputeOf<S>, float>;

template <class S> [[gnu::always_inline]] inline ComputeOf<S> load(S value) {
  if constexpr (std::is_same_v<S, uint16_t>) {
    return bf16_to_float(value);
  } else {
    return value;
  }
}
template <class S, class C> [[gnu::always_inline]] inline S store(C value) {
  if constexpr (std::is_same_v<S, uint16_t>) {
    return float_to_bf16(value);
  } else {
    return static_cast<S>(value);
  }
}

// Integer + - * and negation wrap around (two's complement) instead of overflowing (UB).
template <class I> [[gnu::always_inline]] inline I wrap(std::make_unsigned_t<I> value) { return static_cast<I>(value); }
template <class I> using U = std::make_unsigned_t<I>;

// Integer division truncating toward zero; INT_MIN / -1 wraps to INT_MIN. int32 divides in
// double (exact for 32-bit operands, and vectorisable). REQUIRES: b != 0.
template <class I> [[gnu::always_inline]] inline I int_divide(I a, I b) {
  if constexpr (sizeof(I) == 4) {
    const double q = static_cast<double>(a) / static_cast<double>(b);
    return static_cast<I>(q > 2147483647.0 ? -2147483648.0 : q);
  } else {
    return b == -1 ? wrap<I>(U<I>{0} - static_cast<U<I>>(a)) : a / b;
  }
}

template <BinaryOp op, class C> [[gnu::always_inline]] inline auto apply_binary(C a, C b, float lo, float hi) {
  constexpr bool kFloat = std::is_same_v<C, float>;
  if constexpr (op == BinaryOp::kAdd) {
    if constexpr (kFloat) return a + b; else return wrap<C>(static_cast<U<C>>(a) + static_cast<U<C>>(b));
  } else if constexpr (op == BinaryOp::kSubtract) {
    if constexpr (kFloat) return a - b; else return wrap<C>(static_cast<U<C>>(a) - static_cast<U<C>>(b));
  } else if constexpr (op == BinaryOp::kMultiply) {
    if constexpr (kFloat) return a * b; else return wrap<C>(static_cast<U<C>>(a) * static_cast<U<C>>(b));
  } else if constexpr (op == BinaryOp::kDivide) {
    if constexpr (kFloat) return a / b; else return int_divide(a, b);
  } else if constexpr (op == BinaryOp::kMaximum) {
    return (a >= b || a != a) ? a : b;  // NaN propagates (NumPy); ties pick a
  } else if constexpr (op == BinaryOp::kMinimum) {
    return (a <= b || a != a) ? a : b;
  } else if constexpr (op == BinaryOp::kPower) {
    return static_cast<float>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  } else if constexpr (op == BinaryOp::kEqual) {
    return static_cast<uint8_t>(a == b);
  } else if constexpr (op == BinaryOp::kNotEqual) {
    return static_cast<uint8_t>(a != b);
  } else if constexpr (op == BinaryOp::kLess) {
    return static_cast<uint8_t>(a < b);
  } else if constexpr (op == BinaryOp::kLessEqual) {
    return static_cast<uint8_t>(a <= b);
  } else if constexpr (op == BinaryOp::kGreater) {
    return static_cast<uint8_t>(a > b);
  } else if constexpr (op == BinaryOp::kGreaterEqual) {
    return static_cast<uint8_t>(a >= b);
  } else if constexpr (op == BinaryOp::kReluGrad) {
    return a > 0.0f ? b : 0.0f;
  } else if constexpr (op == BinaryOp::kAbsGrad) {
    return a > 0.0f ? b : (a < 0.0f ? -b : 0.0f);
  } else if constexpr (op == BinaryOp::kSquareGrad) {
    return 2.0f * a * b;
  } else if constexpr (op == BinaryOp::kSqrtGrad) {
    return b / (2.0f * a);
  } else if constexpr (op == BinaryOp::kRsqrtGrad) {
    return -0.5f * b * (a * a * a);
  } else if constexpr (op == BinaryOp::kSigmoidGrad) {
    return b * (a * (1.0f - a));
  } else if constexpr (op == BinaryOp::kTanhGrad) {
    return b * (1.0f - a * a);
  } else if constexpr (op == BinaryOp::kSoftplusGrad) {
    return b * sigmoid_f(a);
  } else if constexpr (op == BinaryOp::kGeluTanhGrad) {
    return b * gelu_tanh_grad_f(a);
  } else if constexpr (op == BinaryOp::kGeluErfGrad) {
    return b * gelu_erf_grad_f(a);
  } else {
    static_assert(op == BinaryOp::kClipGrad);
    return (a >= lo && a <= hi) ? b : 0.0f;
  }
}

template <BinaryOp op, class S, Layout layout>
void binary_loop(const void* a_ptr, const void* b_ptr, void* out_ptr, int64_t n, const KernelParams& params) {
  using O = std::conditional_t<is_comparison(op), uint8_t, S>;
  const S* __restrict a = static_cast<const S*>(a_ptr);
  const S* __restrict b = static_cast<const S*>(b_ptr);
  O* __restrict out = static_cast<O*>(out_ptr);
  const float lo = static_cast<float>(params.lo), hi = static_cast<float>(params.hi);
  if constexpr (layout == Layout::kVectorVector) {
    for (int64_t i = 0; i < n; ++i) out[i] = store<O>(apply_binary<op>(load(a[i]), load(b[i]), lo, hi));
  } else if constexpr (layout == Layout::kVectorScalar) {
    const auto bs = load(b[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = store<O>(apply_binary<op>(load(a[i]), bs, lo, hi));
  } else {
    const auto as = load(a[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = store<O>(apply_binary<op>(as, load(b[i]), lo, hi));
  }
}

template <UnaryOp op, class C> [[gnu::always_inline]] inline C apply_unary(C x, C lo, C hi) {
  constexpr bool kFloat = std::is_same_v<C, float>;
  if constexpr (op == UnaryOp::kNegative) {
    if constexpr (kFloat) return -x; else return wrap<C>(U<C>{0} - static_cast<U<C>>(x));
  } else if constexpr (op == UnaryOp::kAbs) {
    if constexpr (kFloat) return abs_f(x); else return x < 0 ? wrap<C>(U<C>{0} - static_cast<U<C>>(x)) : x;
  } else if constexpr (op == UnaryOp::kSquare) {
    if constexpr (kFloat) return x * x; else return wrap<C>(static_cast<U<C>>(x) * static_cast<U<C>>(x));
  } else if constexpr (op == UnaryOp::kRelu) {
    return x < 0 ? C{0} : x;  // NaN passes through
  } else if constexpr (op == UnaryOp::kClip) {
    return x < lo ? lo : (x > hi ? hi : x);
  } else if constexpr (op == UnaryOp::kExp) {
    return exp_f(x);
  } else if constexpr (op == UnaryOp::kLog) {
    return log_f(x);
  } else if constexpr (op == UnaryOp::kSigmoid) {
    return sigmoid_f(x);
  } else if constexpr (op == UnaryOp::kTanh) {
    return tanh_f(x);
  } else if constexpr (op == UnaryOp::kSoftplus) {
    return softplus_f(x);
  } else if constexpr (op == UnaryOp::kGeluTanh) {
    return gelu_tanh_f(x);
  } else {
    static_assert(op == UnaryOp::kGeluErf);
    return gelu_erf_f(x);
  }
}

// Clip bounds in the compute type: integers round inward and saturate.
template <class C> C clip_bound(double value, bool lower) {
  if constexpr (std::is_same_v<C, float>) {
    return static_cast<float>(value);
  } else {
    const double rounded = lower ? std::ceil(value) : std::floor(value);
    constexpr double kMin = static_cast<double>(INT64_MIN >> (64 - 8 * sizeof(C)));
    constexpr double kMax = -kMin;  // one past the largest value
    return rounded <= kMin ? static_cast<C>(kMin) : rounded >= kMax ? ~static_cast<C>(kMin) : static_cast<C>(rounded);
  }
}

// sqrt and rsqrt go through sqrt_block on float blocks (bfloat16 converts via a buffer).
template <UnaryOp op>
void sqrt_loop(const float* x, float* out, int64_t n) {
  sqrt_block(x, out, n);
  if constexpr (op == UnaryOp::kRsqrt) {
    for (int64_t i = 0; i < n; ++i) out[i] = 1.0f / out[i];
  }
}
template <UnaryOp op>
void sqrt_loop(const uint16_t* x, uint16_t* out, int64_t n) {
  constexpr int64_t kBlock = 256;
  float buffer[kBlock];
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t len = n - start < kBlock ? n - start : kBlock;
    for (int64_t i = 0; i < len; ++i) buffer[i] = bf16_to_float(x[start + i]);
    sqrt_loop<op>(buffer, buffer, len);
    for (int64_t i = 0; i < len; ++i) out[start + i] = float_to_bf16(buffer[i]);
  }
}

template <UnaryOp op, class S>
void unary_loop(const void* x_ptr, void* out_ptr, int64_t n, const KernelParams& params) {
  using C = ComputeOf<S>;
  const S* __restrict x = static_cast<const S*>(x_ptr);
  S* __restrict out = static_cast<S*>(out_ptr);
  if constexpr (op == UnaryOp::kSqrt || op == UnaryOp::kRsqrt) {
    sqrt_loop<op>(x, out, n);
  } else {
    const C lo = clip_bound<C>(params.lo, true), hi = clip_bound<C>(params.hi, false);
    for (int64_t i = 0; i < n; ++i) out[i] = store<S>(apply_unary<op>(load(x[i]), lo, hi));
  }
}

// Float to integer: truncate toward zero, saturate out-of-range values, NaN -> 0 (every
// step defined behaviour, so the loop stays branch-free).
template <class I> [[gnu::always_inline]] inline I float_to_int(float f) {
  constexpr float kLimit = sizeof(I) == 4 ? 2147483648.0f : 9223372036854775808.0f;  // 2^31 or 2^63
  constexpr float kBelowLimit = sizeof(I) == 4 ? 2147483520.0f : 9223371487098961920.0f;  // largest float < it
  const float clamped = f != f ? 0.0f : (f < -kLimit ? -kLimit : (f > kBelowLimit ? kBelowLimit : f));
  const I truncated = static_cast<I>(clamped);
  return f >= kLimit ? ~static_cast<I>(static_cast<U<I>>(1) << (8 * sizeof(I) - 1)) : truncated;
}

// Float to uint8: truncate toward zero, saturate to [0, 255], NaN -> 0 (as float_to_int;
// NumPy's astype on x86 wraps instead, -1.0 -> 255 and 300.0 -> 44).
[[gnu::always_inline]] inline uint8_t float_to_uint8(float f) {
  return static_cast<uint8_t>(f != f ? 0.0f : (f < 0.0f ? 0.0f : (f > 255.0f ? 255.0f : f)));
}

// One element from dtype `from` to dtype `to`. By DType, not storage type: bool and uint8
// share uint8_t storage but convert differently.
template <DType from, DType to> [[gnu::always_inline]] inline StorageOf<to> convert(StorageOf<from> x) {
  using To = StorageOf<to>;
  const auto value = load(x);
  if constexpr (to == DType::kBool) {
    return static_cast<uint8_t>(value != 0);
  } else if constexpr (to == DType::kBFloat16) {
    return float_to_bf16(static_cast<float>(value));
  } else if constexpr (kIsFloat<StorageOf<from>> && to == DType::kUInt8) {
    return float_to_uint8(value);
  } else if constexpr (kIsFloat<StorageOf<from>> && to != DType::kFloat32) {
    return float_to_int<To>(value);
  } else {
    return static_cast<To>(value);  // integers to uint8 wrap modulo 256, as NumPy's astype
  }
}

template <DType from, DType to>
void cast_loop(const void* x_ptr, void* out_ptr, int64_t n) {
  const StorageOf<from>* __restrict x = static_cast<const StorageOf<from>*>(x_ptr);
  StorageOf<to>* __restrict out = static_cast<StorageOf<to>*>(out_ptr);
  for (int64_t i = 0; i < n; ++i) out[i] = convert<from, to>(x[i]);
}

template <class S, int layout>
void where_loop(const uint8_t* condition, const void* x_ptr, const void* y_ptr, void* out_ptr, int64_t n) {
  constexpr bool kC = (layout & 4) != 0, kX = (layout & 2) != 0, kY = (layout & 1) != 0;
  const uint8_t* __restrict c = condition;
  const S* __restrict x = static_cast<const S*>(x_ptr);
  const S* __restrict y = static_cast<const S*>(y_ptr);
  S* __restrict out = static_cast<S*>(out_ptr);
  for (int64_t i = 0; i < n; ++i) {
    const S xv = x[kX ? i : 0], yv = y[kY ? i : 0];  // both loaded: a select, not masked loads
    out[i] = c[kC ? i : 0] != 0 ? xv : yv;
  }
}

// ---- Table construction: one entry per (op, dtype[, layout]); nullptr where unsupported.

template <int I> constexpr BinaryKernel binary_entry() {
  constexpr auto op = static_cast<BinaryOp>(I / (kNumDTypes * kNumLayouts));
  constexpr auto dtype = static_cast<DType>(I / kNumLayouts % kNumDTypes);
  constexpr auto layout = static_cast<Layout>(I % kNumLayouts);
  // Backward kernels only ever see equal shapes.
  constexpr bool kBackward = op >= BinaryOp::kReluGrad;
  if constexpr (binary_supported(op, dtype) && (!kBackward || layout == Layout::kVectorVector)) {
    return &binary_loop<op, StorageOf<dtype>, layout>;
  } else {
    return nullptr;
  }
}

template <int I> constexpr UnaryKernel unary_entry() {
  constexpr auto op = static_cast<UnaryOp>(I / kNumDTypes);
  constexpr auto dtype = static_cast<DType>(I % kNumDTypes);
  if constexpr (unary_supported(op, dtype)) {
    return &unary_loop<op, StorageOf<dtype>>;
  } else {
    return nullptr;
  }
}

template <int I> constexpr CastKernel cast_entry() {
  constexpr auto from = static_cast<DType>(I / kNumDTypes), to = static_cast<DType>(I % kNumDTypes);
  if constexpr (from == DType::kString || to == DType::kString) {
    return nullptr;
  } else {
    return &cast_loop<from, to>;
  }
}

template <int I> constexpr WhereKernel where_entry() {
  constexpr int kSizeIndex = I / kNumWhereLayouts;
  using S = std::conditional_t<kSizeIndex == 0, uint8_t,
                               std::conditional_t<kSizeIndex == 1, uint16_t,
                                                  std::conditional_t<kSizeIndex == 2, uint32_t, uint64_t>>>;
  return &where_loop<S, I % kNumWhereLayouts>;
}

template <class Kernel, template <int> class Entry, int... I>
constexpr std::array<Kernel, sizeof...(I)> make_array(std::integer_sequence<int, I...>) {
  return {Entry<I>::value...};
}

template <int I> struct BinaryEntry { static constexpr BinaryKernel value = binary_entry<I>(); };
template <int I> struct UnaryEntry { static constexpr UnaryKernel value = unary_entry<I>(); };
template <int I> struct CastEntry { static constexpr CastKernel value = cast_entry<I>(); };
template <int I> struct WhereEntry { static constexpr WhereKernel value = where_entry<I>(); };

constexpr KernelTable make_kernel_table() {
  return KernelTable{
      make_array<BinaryKernel, BinaryEntry>(std::make_integer_sequence<int, kNumBinaryOps * kNumDTypes * kNumLayouts>{}),
      make_array<UnaryKernel, UnaryEntry>(std::make_integer_sequence<int, kNumUnaryOps * kNumDTypes>{}),
      make_array<CastKernel, CastEntry>(std::make_integer_sequence<int, kNumDTypes * kNumDTypes>{}),
      make_array<WhereKernel, WhereEntry>(std::make_integer_sequence<int, kNumWhereSizes * kNumWhereLayouts>{}),
  };
}

}  // namespace
}  // namespace chorus::backend::cpu
