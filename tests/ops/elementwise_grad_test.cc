// Gradients of every differentiable elementwise op against central differences, with
// broadcasting; the documented conventions at kinks (relu'(0), abs'(0), maximum ties);
// bfloat16 gradients; and that integer and bool results are never recorded.
#include <cmath>

#include "chorus/autograd/tape.h"
#include "chorus/ops/elementwise.h"
#include "chorus/ops/reduction.h"
#include "tests/ops/elementwise_reference.h"
#include "tests/testing/test_names.h"

namespace chorus {
namespace {

using autograd::GradientTape;
using namespace testing::test_names;
using Inputs = std::vector<Tensor>;

// Shapes for binary gradients: same, row, column, both-sided, scalar, rank mismatch.
const std::pair<Shape, Shape> kGradShapes[] = {
    {Shape{3, 4}, Shape{3, 4}}, {Shape{3, 4}, Shape{4}},    {Shape{3, 4}, Shape{3, 1}},
    {Shape{3, 1}, Shape{1, 4}}, {Shape{}, Shape{2, 3}},     {Shape{2, 3, 4}, Shape{3, 1}},
};

void check_binary(Tensor (*op)(const Tensor&, const Tensor&), double a_lo, double a_hi, double b_lo, double b_hi) {
  uint64_t seed = 700;
  for (const auto& [sa, sb] : kGradShapes) {
    SCOPED_TRACE(sa.to_string() + " with " + sb.to_string());
    expect_gradients_match([&](const Inputs& in) { return op(in[0], in[1]); },
                           {random_tensor(sa, ++seed, a_lo, a_hi), random_tensor(sb, ++seed, b_lo, b_hi)});
  }
}

TEST(ElementwiseGradientTest, Add) { check_binary(ops::add, -1, 1, -1, 1); }
TEST(ElementwiseGradientTest, Subtract) { check_binary(ops::subtract, -1, 1, -1, 1); }
TEST(ElementwiseGradientTest, Multiply) { check_binary(ops::multiply, -1, 1, -1, 1); }
TEST(ElementwiseGradientTest, Divide) { check_binary(ops::divide, -1, 1, 0.5, 2); }
TEST(ElementwiseGradientTest, Maximum) { check_binary(ops::maximum, -1, 1, -1, 1); }
TEST(ElementwiseGradientTest, Minimum) { check_binary(ops::minimum, -1, 1, -1, 1); }
TEST(ElementwiseGradientTest, Power) { check_binary(ops::power, 0.5, 2, -1.5, 1.5); }

void check_unary(Tensor (*op)(const Tensor&), double lo, double hi) {
  expect_gradients_match([&](const Inputs& in) { return op(in[0]); }, {random_tensor({3, 5}, 800, lo, hi)});
}

TEST(ElementwiseGradientTest, Negative) { check_unary(ops::negative, -1, 1); }
TEST(ElementwiseGradientTest, Abs) { check_unary(ops::abs, -1, 1); }
TEST(ElementwiseGradientTest, Square) { check_unary(ops::square, -1, 1); }
TEST(ElementwiseGradientTest, Exp) { check_unary(ops::exp, -2, 2); }
TEST(ElementwiseGradientTest, Log) { check_unary(ops::log, 0.5, 3); }
TEST(ElementwiseGradientTest, Sqrt) { check_unary(ops::sqrt, 0.5, 3); }
TEST(ElementwiseGradientTest, Rsqrt) { check_unary(ops::rsqrt, 0.5, 3); }
TEST(ElementwiseGradientTest, Relu) { check_unary(ops::relu, -1, 1); }
TEST(ElementwiseGradientTest, Sigmoid) { check_unary(ops::sigmoid, -4, 4); }
TEST(ElementwiseGradientTest, Tanh) { check_unary(ops::tanh, -2, 2); }
TEST(ElementwiseGradientTest, Softplus) { check_unary(ops::softplus, -4, 4); }

TEST(ElementwiseGradientTest, GeluBothForms) {
  for (bool approximate : {true, false}) {
    expect_gradients_match([&](const Inputs& in) { return ops::gelu(in[0], approximate); },
                           {random_tensor({4, 6}, 801, -4, 4)});
  }
}

TEST(ElementwiseGradientTest, Clip) {
  expect_gradients_match([](const Inputs& in) { return ops::clip(in[0], -0.5, 0.5); },
                         {random_tensor({4, 6}, 802, -1, 1)});
}

TEST(ElementwiseGradientTest, WhereWithBroadcasting) {
  const Tensor condition = testing::random_of({3, 1}, 803, kBool);
  expect_gradients_match([&](const Inputs& in) { return ops::where(condition, in[0], in[1]); },
                         {random_tensor({1, 4}, 804), random_tensor({}, 805)});
  expect_gradients_match([&](const Inputs& in) { return ops::where(condition, in[0], in[1]); },
                         {random_tensor({3, 4}, 806), random_tensor({4}, 807)});
}

TEST(ElementwiseGradientTest, CastBetweenFloatingDTypes) {
  expect_gradients_match([](const Inputs& in) { return ops::cast(in[0], kFloat32); }, {random_tensor({5}, 808)});
  // float32 -> bfloat16: the gradient is the upstream one cast back to float32.
  const Tensor x = random_tensor({5}, 809);
  const Tensor upstream = random_tensor({5}, 810, -1, 1, kBFloat16);
  GradientTape tape;
  tape.watch(x);
  const Tensor y = ops::cast(x, kBFloat16);
  const auto grads = tape.gradient(y, {x}, upstream);
  ASSERT_EQ(grads[0].dtype(), kFloat32);
  EXPECT_EQ(grads[0].to_vector<float>(), upstream.to_vector<float>());
}

// The fused backward kernels against derivatives written out in double, on a dense grid
// that includes the saturated tails (where inf * 0 must not appear).
TEST(ElementwiseGradientTest, FusedBackwardKernelsMatchAnalyticDerivatives) {
  struct Case {
    const char* name;
    Tensor (*op)(const Tensor&);
    double (*derivative)(double);
    double lo, hi;
  };
  auto gelu_tanh = [](const Tensor& x) { return ops::gelu(x, true); };
  auto gelu_erf = [](const Tensor& x) { return ops::gelu(x, false); };
  const Case cases[] = {
      {"sigmoid", ops::sigmoid, [](double x) { const double s = 1 / (1 + std::exp(-x)); return s * (1 - s); }, -30, 30},
      {"tanh", ops::tanh, [](double x) { return 1 - std::tanh(x) * std::tanh(x); }, -12, 12},
      {"softplus", ops::softplus, [](double x) { return 1 / (1 + std::exp(-x)); }, -30, 30},
      {"gelu_tanh", gelu_tanh,
       [](double x) {
         const double k = std::sqrt(2 / M_PI), v = k * (x + 0.044715 * x * x * x), t = std::tanh(v);
         return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
       },
       -30, 30},
      {"gelu_erf", gelu_erf,
       [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-x * x / 2) / std::sqrt(2 * M_PI); },
       -30, 30},
      {"sqrt", ops::sqrt, [](double x) { return 0.5 / std::sqrt(x); }, 0.01, 100},
      {"rsqrt", ops::rsqrt, [](double x) { return -0.5 / (x * std::sqrt(x)); }, 0.01, 100},
      {"exp", ops::exp, [](double x) { return std::exp(x); }, -20, 20},
      {"log", ops::log, [](double x) { return 1 / x; }, 0.01, 100},
      {"square", ops::square, [](double x) { return 2 * x; }, -100, 100},
      {"abs", ops::abs, [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }, -1, 1},
      {"relu", ops::relu, [](double x) { return x > 0 ? 1.0 : 0.0; }, -1, 1},
  };
  constexpr int64_t kCount = 4001;
  for (const Case& c : cases) {
    std::vector<float> grid(kCount);
    for (int64_t i = 0; i < kCount; ++i) grid[i] = static_cast<float>(c.lo + (c.hi - c.lo) * i / (kCount - 1));
    const Tensor x = from_values(grid, Shape{kCount});
    const Tensor upstream = random_tensor({kCount}, 814, 0.5, 2);
    GradientTape tape;
    tape.watch(x);
    const auto got = tape.gradient(c.op(x), {x}, upstream)[0].to_vector<double>();
    const auto g = upstream.to_vector<double>();
    for (int64_t i = 0; i < kCount; ++i) {
      const double want = g[i] * c.derivative(grid[i]);
      ASSERT_NEAR(got[i], want, 1e-6 + 2e-6 * std::abs(want)) << c.name << " at x = " << grid[i];
    }
  }
}

// d op(x) / dx at the given points, with a unit upstream gradient.
std::vector<float> gradient_at(Tensor (*op)(const Tensor&), std::vector<float> points) {
  const Tensor x = from_values(points, Shape{static_cast<int64_t>(points.size())});
  GradientTape tape;
  tape.watch(x);
  return tape.gradient(op(x), {x})[0].to_vector<float>();
}

TEST(ElementwiseGradientTest, KinksFollowTheDocumentedConventions) {
  EXPECT_EQ(gradient_at(ops::relu, {-1.f, 0.f, 2.f}), (std::vector<float>{0.f, 0.f, 1.f}));
  EXPECT_EQ(gradient_at(ops::abs, {-1.f, 0.f, 2.f}), (std::vector<float>{-1.f, 0.f, 1.f}));
  // Ties of maximum/minimum go to the first argument.
  const Tensor a = from_values({1.f, 2.f, 3.f}), b = from_values({1.f, 5.f, 0.f});
  for (auto op : {ops::maximum, ops::minimum}) {
    GradientTape tape;
    tape.watch(a);
    tape.watch(b);
    const auto grads = tape.gradient(op(a, b), {a, b});
    const bool is_max = op == ops::maximum;
    EXPECT_EQ(grads[0].to_vector<float>(), (std::vector<float>{1.f, is_max ? 0.f : 1.f, is_max ? 1.f : 0.f}));
    EXPECT_EQ(grads[1].to_vector<float>(), (std::vector<float>{0.f, is_max ? 1.f : 0.f, is_max ? 0.f : 1.f}));
  }
  // clip passes the gradient at the bounds themselves.
  const Tensor x = from_values({-1.f, -0.5f, 0.5f, 1.f});
  GradientTape tape;
  tape.watch(x);
  EXPECT_EQ(tape.gradient(ops::clip(x, -0.5, 0.5), {x})[0].to_vector<float>(),
            (std::vector<float>{0.f, 1.f, 1.f, 0.f}));
}

TEST(ElementwiseGradientTest, PowerExponentGradientIsZeroForNonPositiveBases) {
  const Tensor a = from_values({-2.f, 0.f, 2.f}), b = from_values({2.f, 2.f, 3.f});
  GradientTape tape;
  tape.watch(b);
  const auto grads = tape.gradient(ops::power(a, b), {b});
  EXPECT_EQ(grads[0].to_vector<float>()[0], 0.f);
  EXPECT_EQ(grads[0].to_vector<float>()[1], 0.f);
  EXPECT_NEAR(grads[0].to_vector<float>()[2], 8 * std::log(2.0), 1e-5);
}

TEST(ElementwiseGradientTest, BFloat16GradientsKeepTheirDType) {
  const Tensor x = random_tensor({2, 3}, 811, 0.5, 1.5, kBFloat16);
  const Tensor bias = random_tensor({3}, 812, -1, 1, kBFloat16);
  GradientTape tape;
  tape.watch(x);
  tape.watch(bias);
  const Tensor y = ops::gelu(ops::add(ops::multiply(x, x), bias));
  const auto grads = tape.gradient(y, {x, bias});
  EXPECT_EQ(grads[0].dtype(), kBFloat16);
  EXPECT_EQ(grads[1].dtype(), kBFloat16);
  EXPECT_EQ(grads[1].shape(), Shape{3});
}

TEST(ElementwiseGradientTest, IntegerAndBoolResultsAreNotRecorded) {
  const Tensor x = random_tensor({4}, 813);
  GradientTape tape;
  tape.watch(x);
  ops::less(x, x);
  ops::equal(x, x);
  ops::cast(x, kInt32);
  ops::add(ones({4}, kInt32), ones({4}, kInt32));
  EXPECT_EQ(tape.num_records(), 0u);
  ops::exp(x);
  EXPECT_EQ(tape.num_records(), 1u);
}

}  // namespace
}  // namespace chorus
