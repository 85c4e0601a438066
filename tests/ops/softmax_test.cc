#include <cmath>
#include <cstring>
#include <limits>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/backend/cpu/reduce_kernels_isa.h"
#include "chorus/backend/cpu/softmax_kernels.h"
#include "chorus/ops/reduction.h"
#include "tests/ops/reduction_reference.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;
using testing::Ref;
using testing::reference_reduce;

constexpr float kFloatInf = std::numeric_limits<float>::infinity();

// softmax (or log_softmax) along `axis` in double precision.
Tensor reference_softmax(const Tensor& x, int axis, bool log) {
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (int d = axis + 1; d < s.rank(); ++d) inner *= s[d];
  const int64_t n = s[axis];
  const auto v = x.to_vector<double>();
  std::vector<float> y(v.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t r) { return static_cast<size_t>((o * n + r) * inner + i); };
      double m = -INFINITY, total = 0;
      for (int64_t r = 0; r < n; ++r) m = std::max(m, v[at(r)]);
      for (int64_t r = 0; r < n; ++r) total += std::exp(v[at(r)] - m);
      for (int64_t r = 0; r < n; ++r) {
        y[at(r)] = static_cast<float>(log ? v[at(r)] - m - std::log(total) : std::exp(v[at(r)] - m) / total);
      }
    }
  }
  return from_values(y, s);
}

TEST(SoftmaxTest, MatchesTheReferenceOnEveryAxis) {
  for (const Shape& shape : {Shape{1, 1}, Shape{7, 1023}, Shape{1023, 7}, Shape{3, 5, 7}, Shape{300, 1001}}) {
    const Tensor x = random_tensor(shape, 201, -5, 5);
    for (int axis = -1; axis < shape.rank(); ++axis) {
      SCOPED_TRACE(::testing::Message() << shape.to_string() << " axis " << axis);
      const int a = axis < 0 ? axis + shape.rank() : axis;
      EXPECT_TRUE(tensors_near(ops::softmax(x, axis), reference_softmax(x, a, false), 1e-7, 2e-6));
      EXPECT_TRUE(tensors_near(ops::log_softmax(x, axis), reference_softmax(x, a, true), 2e-6, 2e-6));
    }
  }
}

TEST(SoftmaxTest, LargeInputsDoNotOverflow) {
  const Tensor x = from_values({1000.f, 1001.f, 999.f, -1000.f, 0.f, 88.f}, {2, 3});
  EXPECT_TRUE(tensors_near(ops::softmax(x), reference_softmax(x, 1, false), 1e-7, 2e-6));
  EXPECT_TRUE(tensors_near(ops::log_softmax(x), reference_softmax(x, 1, true), 1e-5, 2e-6));
  const auto lse = ops::logsumexp(x, 1).to_vector<float>();
  EXPECT_NEAR(lse[0], 1001 + std::log(1 + std::exp(-1.0) + std::exp(-2.0)), 1e-3);
  EXPECT_NEAR(lse[1], 88 + std::log(1 + std::exp(-88.0)), 1e-4);
}

TEST(SoftmaxTest, InfinitiesFollowTheLimits) {
  const Tensor x = from_values({-kFloatInf, -kFloatInf, -kFloatInf, 1.f, -kFloatInf, 2.f, kFloatInf, 0.f, 1.f}, {3, 3});
  const auto lse = ops::logsumexp(x, 1).to_vector<float>();
  EXPECT_EQ(lse[0], -kFloatInf);  // an all -inf row: log(0), not NaN
  EXPECT_NEAR(lse[1], 2 + std::log1p(std::exp(-1.0)), 1e-6);
  EXPECT_EQ(lse[2], kFloatInf);
  const auto p = ops::softmax(x, 1).to_vector<float>();
  EXPECT_EQ(p[4], 0.f);
  EXPECT_NEAR(p[5], 1 / (1 + std::exp(-1.0)), 1e-6);
  EXPECT_EQ(ops::logsumexp(zeros({2, 0}), 1).to_vector<float>(), (std::vector<float>{-kFloatInf, -kFloatInf}));
}

TEST(LogSumExpTest, EveryAxisCombinationMatchesTheReference) {
  const Tensor x = random_tensor({7, 5, 9}, 202, -3, 3);
  const std::vector<std::pair<ops::Axes, std::vector<int>>> cases = {
      {ops::Axes(), {0, 1, 2}}, {ops::Axes(0), {0}},         {ops::Axes(1), {1}},         {ops::Axes(-1), {2}},
      {ops::Axes({0, 1}), {0, 1}}, {ops::Axes({0, 2}), {0, 2}}, {ops::Axes({1, 2}), {1, 2}}};
  for (const auto& [axes, resolved] : cases) {
    for (bool keepdims : {false, true}) {
      EXPECT_TRUE(tensors_near(ops::logsumexp(x, axes, keepdims),
                               reference_reduce(x, resolved, Ref::kLogSumExp, keepdims), 2e-6, 2e-6));
    }
  }
  const Tensor big = random_tensor({3, 100003}, 203);
  EXPECT_TRUE(tensors_near(ops::logsumexp(big, 1), reference_reduce(big, {1}, Ref::kLogSumExp, false), 1e-5, 1e-6));
  const Tensor slice = big.first_axis_slice(1, 3);
  EXPECT_TRUE(tensors_near(ops::logsumexp(slice, 0), reference_reduce(slice, {0}, Ref::kLogSumExp, false), 1e-6, 1e-6));
}

TEST(SoftmaxTest, BFloat16ComputesInFloat32) {
  const Tensor x = random_tensor({5, 1023}, 204, -4, 4, kBFloat16);
  const Tensor y = ops::softmax(x);
  EXPECT_EQ(y.dtype(), kBFloat16);
  EXPECT_TRUE(tensors_near(y, reference_softmax(x, 1, false), 1e-6, 8e-3));
  EXPECT_TRUE(tensors_near(ops::log_softmax(x, 0), reference_softmax(x, 0, true), 1e-2, 8e-3));
  EXPECT_TRUE(tensors_near(ops::logsumexp(x, 1), reference_reduce(x, {1}, Ref::kLogSumExp, false), 1e-2, 8e-3));
}

TEST(SoftmaxTest, ThreadCountDoesNotChangeTheBits) {
  const Tensor x = random_tensor({301, 1001}, 205);
  const int saved = backend::cpu::intra_op_threads();
  backend::cpu::set_intra_op_threads(1);
  const Tensor a = ops::softmax(x), b = ops::log_softmax(x, 0);
  backend::cpu::set_intra_op_threads(2);
  const Tensor c = ops::softmax(x), d = ops::log_softmax(x, 0);
  backend::cpu::set_intra_op_threads(saved);
  EXPECT_EQ(std::memcmp(a.raw_data(), c.raw_data(), a.nbytes()), 0);
  EXPECT_EQ(std::memcmp(b.raw_data(), d.raw_data(), b.nbytes()), 0);
}

TEST(SoftmaxTest, VectorExpIsAccurateOnEveryInstructionSet) {
  std::vector<float> x;
  for (float v = -87.f; v <= 0.f; v += 0.0137f) x.push_back(v);
  x.insert(x.end(), {-kFloatInf, -100.f, -88.f, std::numeric_limits<float>::quiet_NaN(), 0.5f, 10.f, 88.f});
  const int best = static_cast<int>(backend::cpu::active_isa());
  for (int isa = 0; isa <= best; ++isa) {
    std::vector<float> y(x.size());
    backend::cpu::reduce_kernel_table(static_cast<backend::cpu::Isa>(isa))
        .exp_shift_scale(x.data(), y.data(), static_cast<int64_t>(x.size()), 0.f, 1.f);
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = std::exp(static_cast<double>(x[i]));
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(y[i]));
      } else if (want < 1.2e-38) {
        EXPECT_EQ(y[i], 0.f) << x[i];  // below the normal range: flushed
      } else {
        worst = std::max(worst, std::abs(y[i] - want) / want);
      }
    }
    EXPECT_LT(worst, 3e-7) << "isa " << isa;  // about 2.5 ulp
  }
}

TEST(SoftmaxTest, BadInputsNameTheOp) {
  EXPECT_THAT([] { ops::softmax(zeros({2, 3}, kInt32)); },
              ThrowsMessage<DTypeError>(HasSubstr("softmax: expected a floating dtype (float32 or bfloat16), got int32")));
  EXPECT_THAT([] { ops::log_softmax(zeros({2}, kInt64)); },
              ThrowsMessage<DTypeError>(HasSubstr("log_softmax: expected a floating dtype")));
  EXPECT_THAT([] { ops::logsumexp(zeros({2}, kBool)); },
              ThrowsMessage<DTypeError>(HasSubstr("logsumexp: expected a floating dtype")));
  EXPECT_THAT([] { ops::softmax(zeros({2, 3}), 2); },
              ThrowsMessage<IndexError>(HasSubstr("softmax: axis 2 is out of range for shape (2, 3)")));
  EXPECT_THAT([] { ops::logsumexp(zeros({2, 3}), {1, 1}); },
              ThrowsMessage<ValueError>(HasSubstr("logsumexp: repeated axis")));
}

TEST(SoftmaxGradientTest, MatchesNumericalGradients) {
  expect_gradients_match([](const auto& in) { return ops::softmax(in[0]); }, {random_tensor({3, 7}, 206, -2, 2)});
  expect_gradients_match([](const auto& in) { return ops::softmax(in[0], 0); }, {random_tensor({4, 3, 2}, 207, -2, 2)});
  expect_gradients_match([](const auto& in) { return ops::log_softmax(in[0]); }, {random_tensor({3, 7}, 208, -2, 2)});
  expect_gradients_match([](const auto& in) { return ops::log_softmax(in[0], 1); }, {random_tensor({2, 5, 3}, 209, -2, 2)});
  expect_gradients_match([](const auto& in) { return ops::logsumexp(in[0], {0, 2}); }, {random_tensor({3, 4, 5}, 210)});
  expect_gradients_match([](const auto& in) { return ops::logsumexp(in[0], 1, true); }, {random_tensor({3, 4, 5}, 211)});
  expect_gradients_match([](const auto& in) { return ops::logsumexp(in[0]); }, {random_tensor({6, 5}, 212)});
}

TEST(SoftmaxGradientTest, LargeRowsUseTheVectorBackward) {
  // The gradient of sum(w * softmax(x)) is y * (w - sum(w * y)); checked against doubles.
  const Tensor x = random_tensor({3, 1029}, 213, -3, 3), w = random_tensor({3, 1029}, 214);
  autograd::GradientTape tape;
  tape.watch(x);
  const Tensor y = ops::softmax(x);
  const Tensor dx = tape.gradient(y, {x}, w)[0];
  const auto vy = y.to_vector<double>(), vw = w.to_vector<double>();
  std::vector<float> want(vy.size());
  for (int64_t r = 0; r < 3; ++r) {
    double dot = 0;
    for (int64_t i = 0; i < 1029; ++i) dot += vw[r * 1029 + i] * vy[r * 1029 + i];
    for (int64_t i = 0; i < 1029; ++i) want[r * 1029 + i] = static_cast<float>(vy[r * 1029 + i] * (vw[r * 1029 + i] - dot));
  }
  EXPECT_TRUE(tensors_near(dx, from_values(want, {3, 1029}), 1e-7, 1e-4));
}

}  // namespace
}  // namespace chorus
