#include "chorus/ops/attention.h"

#include <array>
#include <cmath>
#include <limits>

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/matmul.h"
#include "chorus/core/creation.h"
#include "chorus/ops/ops.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::ops {
namespace {

using namespace testing::test_names;

struct Reference {
  Tensor output, probabilities;
};

// Attention in double precision by loops: q (B, T, N, Dk), k (B, S, N, Dk), v (B, S, N, Dv);
// keep (B, N, T, S) of 0/1 (undefined: all kept), dropout (B, N, T, S) multipliers.
Reference reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& keep = {},
                    const Tensor& dropout = {}, double scale = 0) {
  const int64_t B = q.dim(0), T = q.dim(1), N = q.dim(2), Dk = q.dim(3), S = k.dim(1), Dv = v.dim(3);
  if (scale == 0) scale = 1 / std::sqrt(static_cast<double>(Dk));
  const auto vq = q.to_vector<double>(), vk = k.to_vector<double>(), vv = v.to_vector<double>();
  const auto vm = keep.defined() ? keep.to_vector<double>() : std::vector<double>();
  const auto vd = dropout.defined() ? dropout.to_vector<double>() : std::vector<double>();
  std::vector<float> out(static_cast<size_t>(B * T * N * Dv)), probs(static_cast<size_t>(B * N * T * S));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t t = 0; t < T; ++t) {
        std::vector<double> s(static_cast<size_t>(S));
        const int64_t row = ((b * N + n) * T + t) * S;
        double m = -INFINITY;
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < Dk; ++d) dot += vq[((b * T + t) * N + n) * Dk + d] * vk[((b * S + j) * N + n) * Dk + d];
          s[j] = vm.empty() || vm[row + j] > 0.5 ? dot * scale : -1e9;
          m = std::max(m, s[j]);
        }
        double total = 0;
        for (int64_t j = 0; j < S; ++j) total += std::exp(s[j] - m);
        for (int64_t j = 0; j < S; ++j) probs[row + j] = static_cast<float>(std::exp(s[j] - m) / total);
        for (int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < S; ++j) {
            const double p = std::exp(s[j] - m) / total * (vd.empty() ? 1.0 : vd[row + j]);
            acc += p * vv[((b * S + j) * N + n) * Dv + d];
          }
          out[((b * T + t) * N + n) * Dv + d] = static_cast<float>(acc);
        }
      }
    }
  }
  return {from_values(out, Shape{B, T, N, Dv}), from_values(probs, Shape{B, N, T, S})};
}

// A 0/1 float mask of `shape` with roughly one position in three masked.
Tensor random_keep(const Shape& shape, uint64_t seed) {
  auto u = random_tensor(shape, seed, 0, 1).to_vector<float>();
  for (float& x : u) x = x < 0.33f ? 0.f : 1.f;
  return from_values(u, shape);
}

TEST(AttentionTest, MatchesTheReferenceLoop) {
  for (auto [B, T, S, N, Dk, Dv] : std::vector<std::array<int64_t, 6>>{
           {1, 1, 1, 1, 1, 1}, {2, 5, 7, 3, 4, 6}, {3, 16, 9, 2, 8, 8}, {1, 33, 130, 4, 16, 5}}) {
    SCOPED_TRACE(::testing::Message() << B << " " << T << " " << S << " " << N << " " << Dk << " " << Dv);
    const Tensor q = random_tensor({B, T, N, Dk}, 1, -2, 2), k = random_tensor({B, S, N, Dk}, 2, -2, 2),
                 v = random_tensor({B, S, N, Dv}, 3);
    const AttentionOutputs got = dot_product_attention(q, k, v);
    const Reference want = reference(q, k, v);
    EXPECT_TRUE(tensors_near(got.output, want.output, 1e-5, 1e-4));
    EXPECT_TRUE(tensors_near(got.probabilities, want.probabilities, 1e-6, 1e-4));
  }
}

TEST(AttentionTest, MaskedKeysGetZeroProbability) {
  const int64_t B = 2, T = 4, S = 6, N = 3;
  const Tensor q = random_tensor({B, T, N, 5}, 4), k = random_tensor({B, S, N, 5}, 5), v = random_tensor({B, S, N, 2}, 6);
  // (B, 1, T, S): the heads broadcast. Row (0, t=1) is fully masked.
  std::vector<float> m(static_cast<size_t>(B * T * S), 1.f);
  m[0 * T * S + 0 * S + 2] = 0;  // b 0, t 0, key 2
  for (int64_t s = 0; s < S; ++s) m[0 * T * S + 1 * S + s] = 0;
  for (int64_t t = 0; t < T; ++t) m[1 * T * S + t * S + 5] = 0;  // b 1: key 5 for every query
  const Tensor mask = from_values(m, Shape{B, 1, T, S});
  const AttentionOutputs got = dot_product_attention(q, k, v, {.mask = mask});
  const auto p = got.probabilities.to_vector<float>();
  for (int64_t n = 0; n < N; ++n) {
    EXPECT_EQ(p[((0 * N + n) * T + 0) * S + 2], 0.f);
    for (int64_t t = 0; t < T; ++t) EXPECT_EQ(p[((1 * N + n) * T + t) * S + 5], 0.f);
    // A fully masked row is uniform (every score is -1e9), as in Keras.
    for (int64_t s = 0; s < S; ++s) EXPECT_FLOAT_EQ(p[((0 * N + n) * T + 1) * S + s], 1.f / S);
  }
  const Reference want = reference(q, k, v, broadcast_to(mask, Shape{B, N, T, S}));
  EXPECT_TRUE(tensors_near(got.output, want.output, 1e-5, 1e-4));
  EXPECT_TRUE(tensors_near(got.probabilities, want.probabilities, 1e-6, 1e-4));
}

TEST(AttentionTest, MasksBroadcastFromTheRightInEveryDtype) {
  const int64_t B = 2, T = 3, S = 5, N = 2;
  const Tensor q = random_tensor({B, T, N, 4}, 7), k = random_tensor({B, S, N, 4}, 8), v = random_tensor({B, S, N, 3}, 9);
  for (const Shape& shape : {Shape{S}, Shape{T, S}, Shape{T, 1}, Shape{B, 1, 1, S}, Shape{1, N, T, S},
                             Shape{B, N, T, S}, Shape{1, 1, 1, 1}}) {
    SCOPED_TRACE(shape.to_string());
    const Tensor keep = random_keep(shape, 10);
    const Reference want = reference(q, k, v, broadcast_to(keep, Shape{B, N, T, S}));
    for (DType dtype : {kFloat32, kBool, kInt32}) {
      const AttentionOutputs got = dot_product_attention(q, k, v, {.mask = cast(keep, dtype)});
      EXPECT_TRUE(tensors_near(got.output, want.output, 1e-5, 1e-4)) << dtype_name(dtype);
      EXPECT_TRUE(tensors_near(got.probabilities, want.probabilities, 1e-6, 1e-4)) << dtype_name(dtype);
    }
  }
  // Floats keep where > 0.5, as Keras's Softmax(mask=...).
  const Tensor half = full(Shape{T, S}, 0.5);
  EXPECT_TRUE(tensors_near(dot_product_attention(q, k, v, {.mask = half}).probabilities,
                           full(Shape{B, N, T, S}, 1.0 / S), 1e-7, 0));
}

TEST(AttentionTest, ScaleAndDropoutMask) {
  const int64_t B = 2, T = 3, S = 4, N = 2;
  const Tensor q = random_tensor({B, T, N, 4}, 11), k = random_tensor({B, S, N, 4}, 12), v = random_tensor({B, S, N, 3}, 13);
  auto d = random_keep({B, N, T, S}, 14).to_vector<float>();
  for (float& x : d) x *= 2;  // rate 0.5
  const Tensor dropout = from_values(d, Shape{B, N, T, S});
  const AttentionOutputs got = dot_product_attention(q, k, v, {.scale = 0.7, .dropout_mask = dropout});
  const Reference want = reference(q, k, v, {}, dropout, 0.7);
  EXPECT_TRUE(tensors_near(got.output, want.output, 1e-5, 1e-4));
  // The probabilities are reported before dropout (Keras's attention_scores).
  EXPECT_TRUE(tensors_near(got.probabilities, reference(q, k, v, {}, {}, 0.7).probabilities, 1e-6, 1e-4));
}

TEST(AttentionTest, GradientsMatchNumericalOnes) {
  const int64_t B = 2, T = 3, S = 4, N = 2;
  const Tensor q = random_tensor({B, T, N, 3}, 15), k = random_tensor({B, S, N, 3}, 16), v = random_tensor({B, S, N, 2}, 17);
  std::vector<float> m = random_keep({B, 1, T, S}, 18).to_vector<float>();
  for (int64_t s = 0; s < S; ++s) m[1 * T * S + 2 * S + s] = 0;  // a fully masked row
  const Tensor mask = from_values(m, Shape{B, 1, T, S});
  auto d = random_keep({B, N, T, S}, 19).to_vector<float>();
  for (float& x : d) x *= 1.5f;
  const Tensor dropout = from_values(d, Shape{B, N, T, S});
  for (const AttentionOptions& options :
       {AttentionOptions{}, AttentionOptions{.mask = mask}, AttentionOptions{.scale = 0.3, .dropout_mask = dropout},
        AttentionOptions{.mask = cast(mask, kBool), .dropout_mask = dropout}}) {
    SCOPED_TRACE(::testing::Message() << "mask " << options.mask.defined() << " dropout "
                                      << options.dropout_mask.defined());
    auto inputs = [&] { return std::vector<Tensor>{q.clone(), k.clone(), v.clone()}; };
    // Through the output, through the probabilities, and through both at once.
    expect_gradients_match(
        [&](const std::vector<Tensor>& x) { return dot_product_attention(x[0], x[1], x[2], options).output; },
        inputs());
    expect_gradients_match(
        [&](const std::vector<Tensor>& x) { return dot_product_attention(x[0], x[1], x[2], options).probabilities; },
        inputs());
    expect_gradients_match(
        [&](const std::vector<Tensor>& x) {
          const AttentionOutputs o = dot_product_attention(x[0], x[1], x[2], options);
          return concatenate({reshape(o.output, {-1}), reshape(o.probabilities, {-1})});
        },
        inputs());
  }
}

TEST(AttentionTest, GradientsMatchTheUnfusedComposition) {
  // Sizes where oneDNN's blocked kernels run, against the same computation in separate ops.
  const int64_t B = 2, T = 37, S = 70, N = 3, Dk = 16, Dv = 24;
  const Tensor q = random_tensor({B, T, N, Dk}, 20), k = random_tensor({B, S, N, Dk}, 21),
               v = random_tensor({B, S, N, Dv}, 22), keep = random_keep({B, 1, T, S}, 23);
  const Tensor g = random_tensor({B, T, N, Dv}, 24);
  auto fused = [&](const std::vector<Tensor>& x) { return dot_product_attention(x[0], x[1], x[2], {.mask = keep}).output; };
  auto unfused = [&](const std::vector<Tensor>& x) {
    const Tensor qh = transpose(x[0], {0, 2, 1, 3}), kh = transpose(x[1], {0, 2, 1, 3}), vh = transpose(x[2], {0, 2, 1, 3});
    Tensor s = matmul(qh, kh, {.transpose_b = true}) * (1 / std::sqrt(double(Dk)));
    s = where(cast(broadcast_to(keep, Shape{B, N, T, S}), kBool), s, full({}, -1e9));
    return transpose(matmul(softmax(s, -1), vh), {0, 2, 1, 3});
  };
  std::vector<Tensor> grads[2];
  Tensor outs[2];
  for (int i = 0; i < 2; ++i) {
    std::vector<Tensor> x = {q.clone(), k.clone(), v.clone()};
    autograd::GradientTape tape;
    for (const Tensor& t : x) tape.watch(t);
    outs[i] = i == 0 ? fused(x) : unfused(x);
    grads[i] = tape.gradient(outs[i], x, g);
  }
  EXPECT_TRUE(tensors_near(outs[0], outs[1], 1e-5, 1e-4));
  for (int j = 0; j < 3; ++j) EXPECT_TRUE(tensors_near(grads[0][j], grads[1][j], 1e-5, 1e-3)) << "input " << j;
}

TEST(AttentionTest, OnlyTrackedInputsGetGradients) {
  const Tensor q = random_tensor({1, 2, 1, 3}, 25), k = random_tensor({1, 4, 1, 3}, 26), v = random_tensor({1, 4, 1, 2}, 27);
  autograd::GradientTape tape;
  tape.watch(v);
  const Tensor y = dot_product_attention(q, k, v).output;
  const auto grads = tape.gradient(y, {q, v});
  EXPECT_FALSE(grads[0].defined());
  ASSERT_TRUE(grads[1].defined());
  EXPECT_EQ(grads[1].shape(), v.shape());
}

TEST(AttentionTest, EmptyDimensions) {
  // No batch, no keys (zero output, as an empty sum), no depth (uniform attention).
  AttentionOutputs o = dot_product_attention(zeros({0, 3, 2, 4}), zeros({0, 5, 2, 4}), zeros({0, 5, 2, 6}));
  EXPECT_EQ(o.output.shape(), Shape({0, 3, 2, 6}));
  EXPECT_EQ(o.probabilities.shape(), Shape({0, 2, 3, 5}));
  o = dot_product_attention(random_tensor({2, 3, 2, 4}, 28), zeros({2, 0, 2, 4}), zeros({2, 0, 2, 6}));
  EXPECT_TRUE(tensors_near(o.output, zeros({2, 3, 2, 6}), 0, 0));
  o = dot_product_attention(zeros({1, 2, 1, 0}), zeros({1, 4, 1, 0}), random_tensor({1, 4, 1, 3}, 29));
  EXPECT_TRUE(tensors_near(o.probabilities, full({1, 1, 2, 4}, 0.25), 1e-7, 0));
  // Gradients of empty operands are empty or zero.
  const Tensor q = random_tensor({2, 3, 2, 4}, 30), k = zeros({2, 0, 2, 4}), v = zeros({2, 0, 2, 6});
  autograd::GradientTape tape;
  tape.watch(q);
  const auto g = tape.gradient(dot_product_attention(q, k, v).output, {q});
  EXPECT_TRUE(tensors_near(g[0], zeros(q.shape()), 0, 0));
}

TEST(AttentionTest, BFloat16ComputesInFloat32) {
  const Tensor q = random_tensor({2, 5, 2, 8}, 31), k = random_tensor({2, 6, 2, 8}, 32), v = random_tensor({2, 6, 2, 4}, 33);
  const AttentionOutputs f = dot_product_attention(q, k, v);
  const AttentionOutputs h = dot_product_attention(cast(q, kBFloat16), cast(k, kBFloat16), cast(v, kBFloat16));
  EXPECT_EQ(h.output.dtype(), kBFloat16);
  EXPECT_EQ(h.probabilities.dtype(), kBFloat16);
  EXPECT_TRUE(tensors_near(cast(h.output, kFloat32), f.output, 3e-2, 3e-2));
}

TEST(AttentionTest, StridedMatmulOutputsLandInPlace) {
  // backend::cpu::matmul with c_strides: (B, N, T, D) heads written into (B, T, N, D).
  const int64_t B = 2, N = 3, T = 4, K = 5, D = 6;
  const Tensor a = random_tensor({B, N, T, K}, 34), b = random_tensor({B, N, K, D}, 35);
  const Tensor want = transpose(matmul(a, b), {0, 2, 1, 3});
  Tensor got = full({B, T, N, D}, 7.0);
  backend::cpu::MatmulProblem p;
  p.rank = 4;
  p.a_dims = {B, N, T, K};
  p.a_strides = {N * T * K, T * K, K, 1};
  p.b_dims = {B, N, K, D};
  p.b_strides = {N * K * D, K * D, D, 1};
  p.c_dims = {B, N, T, D};
  p.c_strides = {T * N * D, D, N * D, 1};
  backend::cpu::matmul(p, a.data<float>(), b.data<float>(), got.data<float>());
  EXPECT_TRUE(tensors_near(got, want, 1e-6, 1e-6));
  // bfloat16 (run in float32 on widened copies where the CPU has no bf16 kernel).
  const Tensor a16 = cast(a, kBFloat16), b16 = cast(b, kBFloat16);
  Tensor got16 = Tensor::empty({B, T, N, D}, kBFloat16);
  p.dtype = kBFloat16;
  backend::cpu::matmul(p, a16.raw_data(), b16.raw_data(), got16.raw_data());
  EXPECT_TRUE(tensors_near(cast(got16, kFloat32), want, 5e-2, 2e-2));
}

TEST(AttentionTest, BadInputsNameTheOperands) {
  const Tensor q = zeros({2, 5, 4, 8}), k = zeros({2, 6, 4, 8}), v = zeros({2, 6, 4, 3});
  EXPECT_THAT([&] { dot_product_attention(zeros({2, 5, 32}), k, v); },
              ThrowsMessage<ShapeError>(HasSubstr(
                  "dot_product_attention: expected query (B, T, N, Dk), key (B, S, N, Dk) and value (B, S, N, Dv) of "
                  "rank 4, got query (2, 5, 32), key (2, 6, 4, 8), value (2, 6, 4, 3)")));
  EXPECT_THAT([&] { dot_product_attention(q, zeros({3, 6, 4, 8}), v); },
              ThrowsMessage<ShapeError>(HasSubstr("must agree on the batch (axis 0) and heads (axis 2), got query "
                                                  "(2, 5, 4, 8), key (3, 6, 4, 8), value (2, 6, 4, 3)")));
  EXPECT_THAT([&] { dot_product_attention(q, k, zeros({2, 6, 2, 3})); },
              ThrowsMessage<ShapeError>(HasSubstr("must agree on the batch (axis 0) and heads (axis 2)")));
  EXPECT_THAT([&] { dot_product_attention(q, k, zeros({2, 7, 4, 3})); },
              ThrowsMessage<ShapeError>(HasSubstr("key and value must have the same length (axis 1), got query "
                                                  "(2, 5, 4, 8), key (2, 6, 4, 8), value (2, 7, 4, 3)")));
  EXPECT_THAT([&] { dot_product_attention(q, zeros({2, 6, 4, 7}), v); },
              ThrowsMessage<ShapeError>(HasSubstr("query and key must have the same depth (axis 3)")));
  EXPECT_THAT([&] { dot_product_attention(q, k, v, {.mask = zeros({2, 5, 7})}); },
              ThrowsMessage<ShapeError>(HasSubstr(
                  "dot_product_attention: mask of shape (2, 5, 7) does not broadcast to the scores (2, 4, 5, 6)")));
  EXPECT_THAT([&] { dot_product_attention(q, k, v, {.mask = zeros({1, 2, 4, 5, 6})}); },
              ThrowsMessage<ShapeError>(HasSubstr("mask of shape (1, 2, 4, 5, 6) does not broadcast")));
  EXPECT_THAT([&] { dot_product_attention(q, k, v, {.dropout_mask = zeros({2, 4, 5, 1})}); },
              ThrowsMessage<ShapeError>(HasSubstr(
                  "dot_product_attention: dropout_mask of shape (2, 4, 5, 1) differs from the scores (2, 4, 5, 6)")));
  EXPECT_THAT([&] { dot_product_attention(cast(q, kInt32), k, v); },
              ThrowsMessage<DTypeError>(HasSubstr("expected float32 or bfloat16 query, key and value, got int32")));
  EXPECT_THAT([&] { dot_product_attention(q, cast(k, kBFloat16), v); },
              ThrowsMessage<DTypeError>(HasSubstr("query, key and value dtypes differ: float32, bfloat16 and float32")));
}

}  // namespace
}  // namespace chorus::ops
