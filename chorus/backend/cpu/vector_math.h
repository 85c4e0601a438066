// Branch-free float math that GCC auto-vectorises: bfloat16 conversion, exp, log,
// log1p, tanh, sigmoid, softplus, the normal CDF (for exact GELU), and the GELU forms
// with their derivatives. Included only by the per-ISA kernel files; everything is in an
// unnamed namespace so each ISA's copy has internal linkage and the linker never swaps
// an AVX-512 body into the baseline path. Pure functions; thread-safe.
//
// Accuracy against double-precision std:: references (tests/ops/elementwise_unary_test.cc
// checks these bounds): exp and log within 1 float ulp; tanh, sigmoid, softplus within
// 3 ulp (relative 2e-7); the normal CDF and exact GELU within 6 ulp (4e-7); tanh GELU
// see gelu_tanh_exp_f.
// Rules that keep the loops vectorisable (check with -fopt-info-vec after a change): no
// calls (everything always_inline); selects, never branches, and no select with a
// constant arm that feeds further arithmetic (GCC propagates the constant downstream and
// turns the loop into mask-register soup, 2-3x slower); no std:: templates (they could be
// emitted out of line with this file's ISA flags and shared across ISAs); no libm calls
// (sqrt goes through sqrt_block's intrinsics: errno-setting sqrtf does not vectorise).
// The including files also turn off trapping math, without which GCC will not if-convert
// selects around divisions and conversions.
#pragma once

#include <cstdint>

#include <immintrin.h>

namespace chorus::backend::cpu {
namespace {

[[gnu::always_inline]] inline float as_float(uint32_t bits) { return __builtin_bit_cast(float, bits); }
[[gnu::always_inline]] inline uint32_t as_bits(float value) { return __builtin_bit_cast(uint32_t, value); }

constexpr float kInf = __builtin_inff();

[[gnu::always_inline]] inline float bf16_to_float(uint16_t bits) { return as_float(uint32_t{bits} << 16); }
// Round to nearest even; NaN stays a (quiet) NaN. Same rule as chorus::bfloat16.
[[gnu::always_inline]] inline uint16_t float_to_bf16(float value) {
  const uint32_t u = as_bits(value);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

// a * b + c, fused where the ISA has FMA (results then differ from baseline by an ulp).
[[gnu::always_inline]] inline float fmadd(float a, float b, float c) {
#ifdef __FMA__
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}

// The rounding error of a * b: a * b == hi + return value exactly, for hi = a * b.
[[gnu::always_inline]] inline float product_error(float a, float b, float hi) {
#ifdef __FMA__
  return __builtin_fmaf(a, b, -hi);
#else
  // Dekker's split: each half has at most 12 significant bits, so partial products are exact.
  const float ca = a * 4097.0f, cb = b * 4097.0f;
  const float ah = ca - (ca - a), al = a - ah;
  const float bh = cb - (cb - b), bl = b - bh;
  return ((ah * bh - hi) + ah * bl + al * bh) + al * bl;
#endif
}

[[gnu::always_inline]] inline float abs_f(float x) { return as_float(as_bits(x) & 0x7fffffffu); }
[[gnu::always_inline]] inline float copysign_f(float magnitude, float sign) {
  return as_float((as_bits(magnitude) & 0x7fffffffu) | (as_bits(sign) & 0x80000000u));
}

// exp(x) = 2^(n-1) * 2 exp(r), n = round(x / ln2), |r| <= ln2 / 2 (Cody-Waite split of
// ln2), with Cephes's degree-6 polynomial for exp(r) (coefficients doubled: exact).
// n is clamped to [-126, 128] in the integer domain, so 2^(n-1) is a normal float or
// (n = -126) zero: results overflow to inf above 88.72 (there r > 0 and p grows), and
// flush to 0 below 2^-125 (x < -86.99) as FTZ would.
[[gnu::always_inline]] inline float exp_f(float x) {
  // Keeps r finite for x = -inf. The arm is not a constant: GCC would propagate a
  // constant through everything downstream and drown the loop in mask operations.
  x = x < -87.6f ? copysign_f(87.6f, x) : x;
  constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float shifted = fmadd(x, 1.44269504088896341f, kRoundMagic);
  // n from the low mantissa bits; huge x, inf and NaN give large bits, clamped to 128.
  const int32_t n_bits = static_cast<int32_t>(as_bits(shifted) - as_bits(kRoundMagic));
  const int32_t ni = n_bits < 128 ? n_bits : 128;
  const float n = static_cast<float>(ni);
  float r = fmadd(n, -0.693359375f, x);  // ln2's high part has 9 bits: n * it is exact
  r = fmadd(n, 2.12194440e-4f, r);
  float p = 2 * 1.9875691500e-4f;
  p = fmadd(p, r, 2 * 1.3981999507e-3f);
  p = fmadd(p, r, 2 * 8.3334519073e-3f);
  p = fmadd(p, r, 2 * 4.1665795894e-2f);
  p = fmadd(p, r, 2 * 1.6666665459e-1f);
  p = fmadd(p, r, 2 * 5.0000001201e-1f);
  p = fmadd(p, r * r, r + r) + 2.0f;
  return p * as_float(static_cast<uint32_t>(ni + 126) << 23);
}

// log(x) = e ln2 + log(m), x = 2^e m with m in [sqrt(1/2), sqrt(2)); Cephes's polynomial
// for log(1 + f). REQUIRES: x a positive normal float (log_f handles the rest).
[[gnu::always_inline]] inline float log_normal_f(float x, int32_t exponent_offset = 0) {
  const uint32_t u = as_bits(x);
  int32_t e = static_cast<int32_t>((u >> 23) & 0xffu) - 126 - exponent_offset;
  float m = as_float((u & 0x007fffffu) | 0x3f000000u);  // [0.5, 1)
  const bool below = m < 0.707106781186547524f;
  e -= below ? 1 : 0;
  m = (below ? m + m : m) - 1.0f;
  const float z = m * m;
  float p = 7.0376836292e-2f;
  p = fmadd(p, m, -1.1514610310e-1f);
  p = fmadd(p, m, 1.1676998740e-1f);
  p = fmadd(p, m, -1.2420140846e-1f);
  p = fmadd(p, m, 1.4249322787e-1f);
  p = fmadd(p, m, -1.6668057665e-1f);
  p = fmadd(p, m, 2.0000714765e-1f);
  p = fmadd(p, m, -2.4999993993e-1f);
  p = fmadd(p, m, 3.3333331174e-1f);
  const float fe = static_cast<float>(e);
  float y = p * m * z;
  y = fmadd(fe, -2.12194440e-4f, y);
  y = fmadd(z, -0.5f, y);
  return fmadd(fe, 0.693359375f, m + y);
}

// log for every float: denormals are scaled up by 2^23 first; log(+-0) = -inf,
// log(x < 0) = NaN, log(inf) = inf, NaN in gives NaN.
[[gnu::always_inline]] inline float log_f(float x) {
  const bool denormal = x < 1.17549435e-38f;
  const float result = log_normal_f(denormal ? x * 8388608.0f : x, denormal ? 23 : 0);
  // Special values, built from x's bits rather than constants (see the file comment).
  const uint32_t bits = as_bits(x);
  const float special = x == 0.0f ? as_float(bits | 0xff800000u) : as_float(bits | 0x7fc00000u);
  return x > 0.0f && x != kInf ? result : (x == kInf ? x : special);
}

// log(1 + y) for y in [0, 1] (Goldberg's trick: the rounding of 1 + y cancels out).
[[gnu::always_inline]] inline float log1p_unit_f(float y) {
  const float u = 1.0f + y;
  const float d = u - 1.0f;
  return d == 0.0f ? y : log_normal_f(u) * (y / d);
}

[[gnu::always_inline]] inline float sigmoid_f(float x) { return 1.0f / (1.0f + exp_f(-x)); }

// tanh: Cephes's odd polynomial for |x| < 0.625, else 1 - 2 / (exp(2|x|) + 1) with the
// sign restored (saturates to +-1; exp overflowing to inf gives exactly 1).
[[gnu::always_inline]] inline float tanh_f(float x) {
  const float ax = abs_f(x);
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = fmadd(p, z, 2.06390887954e-2f);
  p = fmadd(p, z, -5.37397155531e-2f);
  p = fmadd(p, z, 1.33314422036e-1f);
  p = fmadd(p, z, -3.33332819422e-1f);
  const float small = copysign_f(fmadd(p * z, x, x), x);  // keeps tanh(-0) = -0
  const float large = copysign_f(1.0f - 2.0f / (exp_f(ax + ax) + 1.0f), x);
  return ax < 0.625f ? small : large;
}

// softplus(x) = max(x, 0) + log(1 + exp(-|x|)): no overflow, and x for large x.
[[gnu::always_inline]] inline float softplus_f(float x) {
  return (x > 0.0f ? x : copysign_f(0.0f, x)) + log1p_unit_f(exp_f(-abs_f(x)));
}

// Phi(x) = erfc(-x / sqrt(2)) / 2, the standard normal CDF, and phi(x) its density. With
// u = x / sqrt(2): |u| < 1/2 uses Cephes's erf(u) = u T(u^2); beyond, the tail
// Phi(-|x|) = erfc(|u|) / 2 = exp(-u^2) S(|u|) / 2, with S a polynomial fitted here to
// erfc(v) exp(v^2) on [1/2, 1) (error 6e-10 in exact arithmetic) and Cephes's
// 1/|u| P(1/u^2), 1/|u| R(1/u^2) above 1 and 2. The factor exp(-u^2) amplifies rounding
// of u and u^2, so both are carried as hi + lo pairs.
struct NormalParts {
  float cdf;
  float pdf;
};
[[gnu::always_inline]] inline NormalParts normal_parts_f(float x) {
  constexpr float kHalfSqrt2Hi = 0.707106769084930419921875f;  // float(1/sqrt(2))
  constexpr float kHalfSqrt2Lo = 1.21016898477794e-08f;         // 1/sqrt(2) - hi
  const float u = x * kHalfSqrt2Hi;
  const float u_lo = fmadd(x, kHalfSqrt2Lo, product_error(x, kHalfSqrt2Hi, u));
  const float au = abs_f(u);
  // exp(-u^2), u^2 = sq + sq_lo. Zero beyond |u| = 10 (erfc(10) < 1e-44), which also keeps
  // inf - inf out of sq_lo (the zero is +-0 from x's sign bit: see the file comment).
  const float sq = u * u;
  const float sq_lo = fmadd(2.0f * u, u_lo, product_error(u, u, sq));
  const float gauss = au < 10.0f ? exp_f(-sq) * (1.0f - sq_lo) : copysign_f(0.0f, x);
  // |u| < 1/2: Phi = 1/2 + erf(u) / 2.
  float t = 7.853861353153693e-5f;
  t = fmadd(t, sq, -8.010193625184903e-4f);
  t = fmadd(t, sq, 5.188327685732524e-3f);
  t = fmadd(t, sq, -2.685381193529856e-2f);
  t = fmadd(t, sq, 1.128358514861418e-1f);
  t = fmadd(t, sq, -3.761262582423300e-1f);
  t = fmadd(t, sq, 1.128379165726710e+0f);
  const float cdf_center = fmadd(0.5f * u, t, 0.5f);
  // 1/2 <= |u| < 1: S(|u| - 3/4).
  const float v = au - 0.75f;
  float s = -6.128608249127865e-3f;
  s = fmadd(s, v, 1.459687203168869e-2f);
  s = fmadd(s, v, -3.189714625477791e-2f);
  s = fmadd(s, v, 6.677851825952530e-2f);
  s = fmadd(s, v, -1.298359781503677e-1f);
  s = fmadd(s, v, 2.309582829475403e-1f);
  s = fmadd(s, v, -3.679727017879486e-1f);
  s = fmadd(s, v, 5.069376230239868e-1f);
  // |u| >= 1: 1/|u| P(1/u^2) (|u| < 2) or 1/|u| R(1/u^2).
  const float q = 1.0f / au;
  const float y = q * q;
  float p = 2.326819970068386e-2f;
  p = fmadd(p, y, -1.387039388740657e-1f);
  p = fmadd(p, y, 3.687424674597105e-1f);
  p = fmadd(p, y, -5.824733027278666e-1f);
  p = fmadd(p, y, 6.210004621745983e-1f);
  p = fmadd(p, y, -4.944515323274145e-1f);
  p = fmadd(p, y, 3.404879937665872e-1f);
  p = fmadd(p, y, -2.741127028184656e-1f);
  p = fmadd(p, y, 5.638259427386472e-1f);
  float r = -1.047766399936249e+1f;
  r = fmadd(r, y, 1.297719955372516e+1f);
  r = fmadd(r, y, -7.495518717768503e+0f);
  r = fmadd(r, y, 2.921019019210786e+0f);
  r = fmadd(r, y, -1.015265279202700e+0f);
  r = fmadd(r, y, 4.218463358204948e-1f);
  r = fmadd(r, y, -2.820767439740514e-1f);
  r = fmadd(r, y, 5.641895067754075e-1f);
  const float scaled = au < 1.0f ? s : q * (au < 2.0f ? p : r);
  const float tail = 0.5f * gauss * scaled;  // Phi(-|x|); NaN in, NaN out (through q)
  const float cdf = au < 0.5f ? cdf_center : (x < 0.0f ? tail : 1.0f - tail);
  return {cdf, 0.398942280401432678f * gauss};
}

// GELU, exact form: x Phi(x); derivative Phi(x) + x phi(x).
[[gnu::always_inline]] inline float gelu_erf_f(float x) { return x * normal_parts_f(x).cdf; }
[[gnu::always_inline]] inline float gelu_erf_grad_f(float x) {
  const NormalParts parts = normal_parts_f(x);
  return fmadd(x, parts.pdf, parts.cdf);
}

// GELU, tanh form: x (1 + tanh(v)) / 2 = x sigmoid(2v), v = sqrt(2/pi) (x + 0.044715 x^3);
// the sigmoid form has no cancellation for negative x. There gelu ~ x exp(2v), so the
// rounding error of 2v becomes relative error of the result: 2v = x w is carried as
// hi + lo (the product's exact error), leaving w's rounding: relative error <= 6e-7 for
// x >= -3, 1e-6 for x >= -5, growing to 6e-6 at x = -9 (where gelu ~ 1e-27). Exact 2v
// (in double) would cost twice the time.
constexpr float kGeluTanhK2 = 1.59576912160573071f;    // 2 sqrt(2/pi)
constexpr float kGeluTanhK2C = 0.0713548162726008164f;  // 2 sqrt(2/pi) 0.044715
// exp(-2v) (see above). When 2v overflows float (|x| > ~7e18, or x = inf), lo is inf or
// NaN: it is replaced by a signed zero (a non-constant arm, see exp_f); exp(-hi) has
// saturated to 0 or inf by then.
[[gnu::always_inline]] inline float gelu_tanh_exp_f(float x) {
  const float w = fmadd(kGeluTanhK2C * x, x, kGeluTanhK2);
  const float hi = x * w;
  const float lo = product_error(x, w, hi);
  const float lo_finite = abs_f(lo) < 1e-3f ? lo : copysign_f(0.0f, lo);
  return exp_f(-hi) * (1.0f - lo_finite);
}
[[gnu::always_inline]] inline float gelu_tanh_f(float x) { return x / (1.0f + gelu_tanh_exp_f(x)); }
// d/dx x s(2v) = s + x * 2 s (1 - s) * dv/dx, dv/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2),
// with s = 1 / (1 + e), e = exp(-2v), and 1 - s taken as e s near s = 1 (no cancellation).
// The second term is 0 once s saturates; it is dropped there, where inf * 0 would be NaN.
[[gnu::always_inline]] inline float gelu_tanh_grad_f(float x) {
  const float e = gelu_tanh_exp_f(x);
  const float s = 1.0f / (1.0f + e);
  const float one_minus_s = e < 1.0f ? e * s : 1.0f - s;
  const float two_dv = fmadd(3.0f * kGeluTanhK2C, x * x, kGeluTanhK2);  // 2 dv/dx
  const float slope = x * (s * one_minus_s) * two_dv;
  return s + (abs_f(x) < 20.0f ? slope : copysign_f(0.0f, x));
}

// out[i] = sqrt(in[i]) with the ISA's vector sqrt (IEEE-exact, like std::sqrt); in and out
// may be the same buffer.
inline void sqrt_block(const float* in, float* out, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  // (maskz: GCC 12 warns about the undefined source operand of plain _mm512_sqrt_ps)
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, _mm512_maskz_sqrt_ps(0xffff, _mm512_loadu_ps(in + i)));
#elif defined(__AVX__)
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_sqrt_ps(_mm256_loadu_ps(in + i)));
#endif
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(out + i, _mm_sqrt_ps(_mm_loadu_ps(in + i)));
  for (; i < n; ++i) out[i] = _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(in[i])));
}

}  // namespace
}  // namespace chorus::backend::cpu
