#include "chorus/ops/matmul.h"

#include <cstring>
#include <thread>

#include "chorus/backend/cpu/matmul.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/ops/ops.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;

// Reference: the definition of batched matmul, accumulating in double. a and b have
// rank >= 2 (stored layout; `ta`/`tb` swap their last two axes) and batch axes that
// broadcast. Returns float32.
Tensor reference_matmul(const Tensor& a, const Tensor& b, bool ta = false, bool tb = false) {
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const int ra = sa.rank(), rb = sb.rank();
  const int64_t m = ta ? sa[ra - 1] : sa[ra - 2], k = ta ? sa[ra - 2] : sa[ra - 1];
  const int64_t n = tb ? sb[rb - 2] : sb[rb - 1];
  const Shape batch_a(std::span<const int64_t>(sa.begin(), ra - 2));
  const Shape batch_b(std::span<const int64_t>(sb.begin(), rb - 2));
  const Shape batch = broadcast_shapes(batch_a, batch_b, "reference");
  const auto stride_a = broadcast_strides(batch_a, batch), stride_b = broadcast_strides(batch_b, batch);
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  Shape out_shape = batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  Tensor out = Tensor::empty(out_shape);
  float* po = out.data<float>();
  const auto batch_strides = contiguous_strides(batch);
  for (int64_t bi = 0; bi < batch.numel(); ++bi) {
    int64_t oa = 0, ob = 0;
    for (int d = 0; d < batch.rank(); ++d) {
      const int64_t index = bi / batch_strides[d] % batch[d];
      oa += index * stride_a[d];
      ob += index * stride_b[d];
    }
    const double* pa = va.data() + oa * m * k;
    const double* pb = vb.data() + ob * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += (ta ? pa[p * m + i] : pa[i * k + p]) * (tb ? pb[j * k + p] : pb[p * n + j]);
        po[(bi * m + i) * n + j] = static_cast<float>(s);
      }
    }
  }
  return out;
}

// Stored shape of an operand whose logical matrix is (rows, cols).
Shape stored(Shape batch, int64_t rows, int64_t cols, bool transposed) {
  batch.push_back(transposed ? cols : rows);
  batch.push_back(transposed ? rows : cols);
  return batch;
}

void expect_matches_reference(const Shape& batch_a, const Shape& batch_b, int64_t m, int64_t k, int64_t n,
                              bool ta, bool tb, uint64_t seed) {
  const Tensor a = random_tensor(stored(batch_a, m, k, ta), seed);
  const Tensor b = random_tensor(stored(batch_b, k, n, tb), seed + 1);
  const Tensor out = ops::matmul(a, b, {.transpose_a = ta, .transpose_b = tb});
  EXPECT_TRUE(tensors_near(out, reference_matmul(a, b, ta, tb), 1e-4, 1e-4))
      << a.shape().to_string() << " @ " << b.shape().to_string() << " ta=" << ta << " tb=" << tb;
}

TEST(MatmulTest, TwoDimensionalAtOddSizes) {
  const int64_t sizes[][3] = {{1, 1, 1}, {7, 33, 1}, {1, 1023, 7}, {33, 7, 1023}, {1023, 33, 7}, {64, 784, 33}};
  uint64_t seed = 1;
  for (const auto& s : sizes) expect_matches_reference({}, {}, s[0], s[1], s[2], false, false, seed += 2);
}

TEST(MatmulTest, AllTransposeCombinations) {
  uint64_t seed = 10;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      expect_matches_reference({}, {}, 7, 33, 5, ta, tb, seed += 2);
      expect_matches_reference({}, {}, 33, 1023, 1, ta, tb, seed += 2);
      expect_matches_reference({3}, {3}, 7, 33, 5, ta, tb, seed += 2);
      expect_matches_reference({2, 1}, {3}, 7, 1, 5, ta, tb, seed += 2);
      expect_matches_reference({3}, {}, 7, 33, 5, ta, tb, seed += 2);
      expect_matches_reference({}, {2, 3}, 7, 33, 5, ta, tb, seed += 2);
    }
  }
}

TEST(MatmulTest, BatchedAndBroadcastBatch) {
  uint64_t seed = 40;
  expect_matches_reference({3}, {3}, 7, 33, 5, false, false, seed += 2);
  expect_matches_reference({3}, {}, 7, 33, 5, false, false, seed += 2);         // b shared: folds into M
  expect_matches_reference({}, {3}, 7, 33, 5, false, false, seed += 2);         // a shared
  expect_matches_reference({2, 1}, {3}, 7, 33, 5, false, false, seed += 2);     // (2,1,M,K) x (3,K,N)
  expect_matches_reference({2, 1, 4}, {3, 1}, 5, 6, 7, false, false, seed += 2);  // both broadcast
  expect_matches_reference({1, 1}, {1}, 7, 33, 5, false, false, seed += 2);     // all-1 batch
  expect_matches_reference({4, 1}, {1, 1}, 7, 33, 5, false, false, seed += 2);  // b all-1 batch
  const Tensor out = ops::matmul(random_tensor({2, 1, 7, 4}, 1), random_tensor({3, 4, 5}, 2));
  EXPECT_EQ(out.shape(), Shape({2, 3, 7, 5}));
}

TEST(MatmulTest, OneDimensionalOperandsArePromotedAndSqueezed) {
  const Tensor v = random_tensor({33}, 1), w = random_tensor({33}, 2);
  const Tensor m = random_tensor({7, 33}, 3), k_by_n = random_tensor({33, 5}, 4);
  const Tensor batched = random_tensor({3, 7, 33}, 5), batched_kn = random_tensor({3, 33, 5}, 6);

  Tensor vm = ops::matmul(v, k_by_n);  // (K,) @ (K, N) -> (N,)
  EXPECT_TRUE(tensors_near(vm, reference_matmul(v.view({1, 33}), k_by_n).view({5}), 1e-5, 1e-5));
  Tensor mv = ops::matmul(m, v);  // (M, K) @ (K,) -> (M,)
  EXPECT_TRUE(tensors_near(mv, reference_matmul(m, v.view({33, 1})).view({7}), 1e-5, 1e-5));
  Tensor dot = ops::matmul(v, w);  // (K,) @ (K,) -> ()
  EXPECT_EQ(dot.shape(), Shape{});
  EXPECT_NEAR(dot.item<double>(), reference_matmul(v.view({1, 33}), w.view({33, 1})).item<double>(), 1e-5);
  Tensor bv = ops::matmul(batched, v);  // (B, M, K) @ (K,) -> (B, M)
  EXPECT_TRUE(tensors_near(bv, reference_matmul(batched, v.view({33, 1})).view({3, 7}), 1e-5, 1e-5));
  Tensor vb = ops::matmul(v, batched_kn);  // (K,) @ (B, K, N) -> (B, N)
  EXPECT_TRUE(tensors_near(vb, reference_matmul(v.view({1, 33}), batched_kn).view({3, 5}), 1e-5, 1e-5));
  // Transpose flags have nothing to swap on a 1-D operand.
  EXPECT_TRUE(tensors_near(ops::matmul(v, k_by_n, {.transpose_a = true}), vm));
}

TEST(MatmulTest, ViewsAsInputs) {
  const Tensor x = random_tensor({20, 33}, 1), w = random_tensor({5, 33}, 2);
  const Tensor rows = x.first_axis_slice(3, 10);  // offset into shared storage
  EXPECT_TRUE(tensors_near(ops::matmul(rows, w, {.transpose_b = true}), reference_matmul(rows, w, false, true), 1e-5,
                           1e-5));
  const Tensor batched = x.view({4, 5, 33});
  EXPECT_TRUE(tensors_near(ops::matmul(batched, w, {.transpose_b = true}), reference_matmul(batched, w, false, true),
                           1e-5, 1e-5));
  const Tensor tail = x.first_axis_slice(19, 20);
  EXPECT_TRUE(tensors_near(ops::matmul(tail, tail, {.transpose_a = true}), reference_matmul(tail, tail, true), 1e-5,
                           1e-5));
}

TEST(MatmulTest, BFloat16MatchesFloat32ReferenceWithinRounding) {
  struct Case { Shape a, b; bool ta, tb; };
  const Case cases[] = {{{7, 1023}, {1023, 33}, false, false},
                        {{1023, 7}, {33, 1023}, true, true},
                        {{64, 256}, {256, 33}, false, false},
                        {{3, 7, 64}, {64, 5}, false, false},
                        {{2, 64, 7}, {2, 5, 64}, true, true}};
  uint64_t seed = 70;
  for (const Case& c : cases) {
    const Tensor a = random_tensor(c.a, seed += 2, -1, 1, kBFloat16), b = random_tensor(c.b, seed + 1, -1, 1, kBFloat16);
    const Tensor out = ops::matmul(a, b, {.transpose_a = c.ta, .transpose_b = c.tb});
    ASSERT_EQ(out.dtype(), kBFloat16);
    // Inputs are exact bf16 values; accumulation is float32, so the error is the final
    // rounding to bf16 (relative 2^-8) plus float32 summation error.
    EXPECT_TRUE(tensors_near(out, reference_matmul(a, b, c.ta, c.tb), 2e-3, 8e-3)) << c.a.to_string();
  }
}

TEST(MatmulTest, EmptyDimensions) {
  Tensor no_rows = ops::matmul(random_tensor({0, 5}, 1), random_tensor({5, 3}, 2));
  EXPECT_EQ(no_rows.shape(), Shape({0, 3}));
  Tensor no_batch = ops::matmul(random_tensor({0, 2, 5}, 1), random_tensor({5, 3}, 2));
  EXPECT_EQ(no_batch.shape(), Shape({0, 2, 3}));
  Tensor no_inner = ops::matmul(random_tensor({4, 0}, 1), random_tensor({0, 3}, 2));  // empty sums
  EXPECT_TRUE(tensors_near(no_inner, zeros({4, 3})));
  Tensor no_inner_bf16 = ops::matmul(zeros({4, 0}, kBFloat16), zeros({0, 3}, kBFloat16), {.transpose_b = false});
  EXPECT_TRUE(tensors_near(no_inner_bf16, zeros({4, 3})));
}

TEST(MatmulTest, GradientsPlainAndTransposed) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      testing::expect_gradients_match(
          [&](const std::vector<Tensor>& in) { return ops::matmul(in[0], in[1], {ta, tb}); },
          {random_tensor(stored({}, 3, 4, ta), 1), random_tensor(stored({}, 4, 5, tb), 2)});
    }
  }
}

TEST(MatmulTest, GradientsBatchedAndBroadcast) {
  const std::pair<Shape, Shape> cases[] = {{{2, 3, 4}, {2, 4, 5}},     // batched
                                           {{2, 3, 4}, {4, 5}},        // b broadcast (folded)
                                           {{3, 4}, {2, 4, 5}},        // a broadcast
                                           {{2, 1, 3, 4}, {3, 4, 2}}};  // both broadcast
  for (const auto& [sa, sb] : cases) {
    testing::expect_gradients_match([](const std::vector<Tensor>& in) { return ops::matmul(in[0], in[1]); },
                                    {random_tensor(sa, 1), random_tensor(sb, 2)});
  }
  testing::expect_gradients_match(
      [](const std::vector<Tensor>& in) { return ops::matmul(in[0], in[1], {.transpose_a = true, .transpose_b = true}); },
      {random_tensor({2, 1, 4, 3}, 3), random_tensor({3, 2, 4}, 4)});
}

TEST(MatmulTest, GradientsOneDimensional) {
  auto fn = [](const std::vector<Tensor>& in) { return ops::matmul(in[0], in[1]); };
  testing::expect_gradients_match(fn, {random_tensor({4}, 1), random_tensor({4, 5}, 2)});
  testing::expect_gradients_match(fn, {random_tensor({3, 4}, 3), random_tensor({4}, 4)});
  testing::expect_gradients_match(fn, {random_tensor({4}, 5), random_tensor({4}, 6)});
  testing::expect_gradients_match(fn, {random_tensor({2, 3, 4}, 7), random_tensor({4}, 8)});
}

TEST(MatmulTest, BFloat16GradientsMatchFloat32) {
  const Tensor a = random_tensor({7, 33}, 1, -1, 1, kBFloat16), b = random_tensor({5, 33}, 2, -1, 1, kBFloat16);
  const Tensor g = random_tensor({7, 5}, 3, -1, 1, kBFloat16);
  autograd::GradientTape tape;
  tape.watch(a);
  tape.watch(b);
  const auto grads = tape.gradient(ops::matmul(a, b, {.transpose_b = true}), {a, b}, g);
  ASSERT_EQ(grads[0].dtype(), kBFloat16);
  EXPECT_TRUE(tensors_near(grads[0], reference_matmul(g, b), 2e-3, 8e-3));           // G @ B
  EXPECT_TRUE(tensors_near(grads[1], reference_matmul(g, a, true, false), 2e-3, 8e-3));  // G^T @ A
}

TEST(MatmulTest, ErrorsNameTheShapes) {
  EXPECT_THAT([] { ops::matmul(zeros({64, 785}), zeros({784, 256})); },
              ThrowsMessage<ShapeError>(HasSubstr("matmul: inner dimensions differ: (64, 785) @ (784, 256): 785 vs 784")));
  EXPECT_THAT([] { ops::matmul(zeros({64, 784}), zeros({784, 256}), {.transpose_b = true}); },
              ThrowsMessage<ShapeError>(HasSubstr("(64, 784) @ (784, 256) with transpose_b: 784 vs 256")));
  EXPECT_THAT([] { ops::matmul(zeros({5}), zeros({4})); },
              ThrowsMessage<ShapeError>(HasSubstr("matmul: inner dimensions differ: (5,) @ (4,)")));
  EXPECT_THAT([] { ops::matmul(zeros({2, 3, 4}), zeros({5, 4, 6})); },
              ThrowsMessage<ShapeError>(HasSubstr("matmul: batch dimensions do not broadcast: (2, 3, 4) @ (5, 4, 6)")));
  EXPECT_THAT([] { ops::matmul(scalar(2), zeros({3})); },
              ThrowsMessage<ShapeError>(HasSubstr("matmul: expected operands of rank >= 1, got shapes () and (3,)")));
  EXPECT_THAT([] { ops::matmul(zeros({2, 2}), zeros({2, 2}, kBFloat16)); },
              ThrowsMessage<DTypeError>(HasSubstr("matmul: dtypes differ: float32 and bfloat16")));
  EXPECT_THAT([] { ops::matmul(zeros({2, 2}, kInt32), zeros({2, 2}, kInt32)); },
              ThrowsMessage<DTypeError>(HasSubstr("matmul: expected float32 or bfloat16 operands, got int32")));
}

// (..., N) + bias (N,) by broadcasting, on the reference.
Tensor plus_bias(const Tensor& product, const Tensor& bias) {
  Tensor out = Tensor::empty(product.shape());
  const auto p = product.to_vector<double>(), b = bias.to_vector<double>();
  for (size_t i = 0; i < p.size(); ++i) out.data<float>()[i] = static_cast<float>(p[i] + b[i % b.size()]);
  return out;
}

TEST(MatmulBiasTest, AddsTheBiasToEveryRowOfThePlainBatchedAndTransposedProducts) {
  struct Case { Shape a, b; bool ta, tb; };
  const Case cases[] = {{{7, 33}, {33, 9}, false, false},
                        {{2, 3, 33}, {33, 9}, false, false},   // batch folded into M
                        {{2, 3, 33}, {2, 33, 9}, false, false},  // batched
                        {{7, 33}, {9, 33}, false, true},       // the tied-embedding head
                        {{33, 7}, {9, 33}, true, true}};
  uint64_t seed = 300;
  for (const Case& c : cases) {
    const Tensor a = random_tensor(c.a, seed += 3), b = random_tensor(c.b, seed + 1), bias = random_tensor({9}, seed + 2);
    const Tensor out = ops::matmul(a, b, bias, {.transpose_a = c.ta, .transpose_b = c.tb});
    EXPECT_TRUE(tensors_near(out, plus_bias(reference_matmul(a, b, c.ta, c.tb), bias), 1e-5, 1e-5)) << c.a.to_string();
    // In float32 the fused add is the separate one: the accumulator is float32 either way.
    const Tensor separate = ops::matmul(a, b, {.transpose_a = c.ta, .transpose_b = c.tb}) + bias;
    EXPECT_EQ(std::memcmp(out.data<float>(), separate.data<float>(), static_cast<size_t>(out.numel()) * 4), 0);
  }
}

TEST(MatmulBiasTest, BFloat16RoundsOnceAfterTheBias) {
  const Tensor a = random_tensor({64, 256}, 1, -1, 1, kBFloat16), b = random_tensor({33, 256}, 2, -1, 1, kBFloat16);
  const Tensor bias = random_tensor({33}, 3, -1, 1, kBFloat16);
  const Tensor out = ops::matmul(a, b, bias, {.transpose_b = true});
  ASSERT_EQ(out.dtype(), kBFloat16);
  EXPECT_TRUE(tensors_near(out, plus_bias(reference_matmul(a, b, false, true), bias), 2e-3, 8e-3));
}

TEST(MatmulBiasTest, GradientsReachTheBias) {
  for (bool tb : {false, true}) {
    testing::expect_gradients_match(
        [&](const std::vector<Tensor>& in) { return ops::matmul(in[0], in[1], in[2], {.transpose_b = tb}); },
        {random_tensor({2, 3, 4}, 1), random_tensor(stored({}, 4, 5, tb), 2), random_tensor({5}, 3)});
  }
}

TEST(MatmulBiasTest, OtherBiasesBroadcastAsAnAdd) {
  const Tensor a = random_tensor({3, 4}, 1), b = random_tensor({4, 5}, 2);
  const Tensor column = random_tensor({3, 1}, 3);  // not a (N,) vector: a separate add
  EXPECT_TRUE(tensors_near(ops::matmul(a, b, column), ops::matmul(a, b) + column, 0, 0));
  const Tensor vector = random_tensor({4}, 5), per_row = random_tensor({3}, 6);  // (3, 4) @ (4,) -> (3,)
  EXPECT_TRUE(tensors_near(ops::matmul(a, vector, per_row), ops::matmul(a, vector) + per_row, 0, 0));
  EXPECT_THAT([&] { ops::matmul(a, b, random_tensor({4}, 4)); }, ThrowsMessage<ShapeError>(HasSubstr("(3, 5)")));
}

TEST(MatmulCacheTest, ReusesPrimitivesAndStaysBounded) {
  // A fresh thread has an empty cache of its own.
  std::thread([] {
    EXPECT_EQ(backend::cpu::matmul_cache_size(), 0u);
    const Tensor a = random_tensor({7, 33}, 1), b = random_tensor({33, 5}, 2);
    ops::matmul(a, b);
    ops::matmul(a, b);
    EXPECT_EQ(backend::cpu::matmul_cache_size(), 1u);
    ops::matmul(a, b, {.transpose_a = false, .transpose_b = false});
    ops::matmul(b, a, {.transpose_a = true, .transpose_b = true});  // other strides: a new entry
    EXPECT_EQ(backend::cpu::matmul_cache_size(), 2u);
    backend::cpu::set_intra_op_threads(1);  // another thread budget: another primitive
    EXPECT_TRUE(tensors_near(ops::matmul(a, b), reference_matmul(a, b), 1e-5, 1e-5));
    EXPECT_EQ(backend::cpu::matmul_cache_size(), 3u);
    for (int64_t m = 1; m <= static_cast<int64_t>(backend::cpu::kMatmulCacheCapacity) + 10; ++m) {
      ops::matmul(zeros({m, 2}), zeros({2, 2}));
    }
    EXPECT_EQ(backend::cpu::matmul_cache_size(), backend::cpu::kMatmulCacheCapacity);
    EXPECT_TRUE(tensors_near(ops::matmul(a, b), reference_matmul(a, b), 1e-5, 1e-5));  // evicted, rebuilt
    backend::cpu::clear_matmul_cache();
    EXPECT_EQ(backend::cpu::matmul_cache_size(), 0u);
  }).join();
}

TEST(MatmulCacheTest, ThreadsComputeIndependently) {
  const Tensor b = random_tensor({33, 17}, 1);
  std::vector<Tensor> inputs = {random_tensor({9, 33}, 2), random_tensor({9, 33}, 3)}, results(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      backend::cpu::set_intra_op_threads(1);
      for (int i = 0; i < 50; ++i) results[t] = ops::matmul(inputs[t], b);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 2; ++t) EXPECT_TRUE(tensors_near(results[t], reference_matmul(inputs[t], b), 1e-5, 1e-5));
}

}  // namespace
}  // namespace chorus

namespace chorus {
namespace {

// A compiled step may run a matmul on one thread or on the caller's (jit::Executable picks
// the faster), so the bits must not depend on the thread count.
TEST(MatmulThreadsTest, TheSameBitsOnOneThreadAndOnTwo) {
  const int saved = backend::cpu::intra_op_threads();
  for (int64_t m : {1, 16, 64, 300}) {
    for (int64_t k : {10, 256, 784}) {
      for (int64_t n : {3, 256, 1000}) {
        for (int t = 0; t < 4; ++t) {
          const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
          const Tensor a = random_tensor(ta ? Shape{k, m} : Shape{m, k}, 1);
          const Tensor b = random_tensor(tb ? Shape{n, k} : Shape{k, n}, 2);
          backend::cpu::set_intra_op_threads(2);
          const Tensor two = ops::matmul(a, b, {.transpose_a = ta, .transpose_b = tb});
          backend::cpu::set_intra_op_threads(1);
          const Tensor one = ops::matmul(a, b, {.transpose_a = ta, .transpose_b = tb});
          EXPECT_TRUE(testing::same_bits(one, two)) << m << "x" << k << "x" << n << " ta=" << ta << " tb=" << tb;
        }
      }
    }
  }
  backend::cpu::set_intra_op_threads(saved);
}

}  // namespace
}  // namespace chorus
