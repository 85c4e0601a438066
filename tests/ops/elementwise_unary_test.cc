// Unary elementwise ops against std:: references in double: every accepted dtype, odd
// sizes up to the threaded path, offset views; dense accuracy sweeps of the vectorised
// transcendentals; IEEE special values; and the dtype errors.
#include <cmath>
#include <limits>

#include "chorus/ops/elementwise.h"
#include "tests/ops/elementwise_reference.h"
#include "tests/testing/test_names.h"

namespace chorus {
namespace {

using namespace testing::test_names;
using testing::kSizes;
using testing::random_view;
using testing::reference_unary;
using testing::values_match;

constexpr double kInf = std::numeric_limits<double>::infinity();

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double gelu_tanh_reference(double x) {
  // 0.5 x (1 + tanh(v)) written as x sigmoid(2v): the same function without cancellation.
  const double v = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
  return x / (1 + std::exp(-2 * v));
}

struct UnaryCase {
  const char* name;
  Tensor (*op)(const Tensor&);
  double (*reference)(double);
  double lo, hi;  // input range
  bool numeric;   // also takes int32/int64
  double rtol = 2e-6;
};

Tensor gelu_tanh(const Tensor& x) { return ops::gelu(x, true); }
Tensor gelu_erf(const Tensor& x) { return ops::gelu(x, false); }

const UnaryCase kUnary[] = {
    {"negative", ops::negative, [](double x) { return -x; }, -100, 100, true},
    {"abs", ops::abs, [](double x) { return std::abs(x); }, -100, 100, true},
    {"square", ops::square, [](double x) { return x * x; }, -100, 100, true},
    {"relu", ops::relu, [](double x) { return std::max(x, 0.0); }, -100, 100, true},
    {"exp", ops::exp, [](double x) { return std::exp(x); }, -80, 80, false},
    {"log", ops::log, [](double x) { return std::log(x); }, 1e-3, 1e3, false},
    {"sqrt", ops::sqrt, [](double x) { return std::sqrt(x); }, 0, 1e3, false},
    {"rsqrt", ops::rsqrt, [](double x) { return 1 / std::sqrt(x); }, 1e-3, 1e3, false},
    {"sigmoid", ops::sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, -30, 30, false},
    {"tanh", ops::tanh, [](double x) { return std::tanh(x); }, -10, 10, false},
    {"softplus", ops::softplus, [](double x) { return std::log1p(std::exp(-std::abs(x))) + std::max(x, 0.0); },
     -30, 30, false},
    // The tanh form trades accuracy far in the negative tail for speed (vector_math.h).
    {"gelu_tanh", gelu_tanh, gelu_tanh_reference, -6, 6, false, 4e-6},
    {"gelu_erf", gelu_erf, [](double x) { return x * normal_cdf(x); }, -6, 6, false},
};

TEST(ElementwiseUnaryTest, MatchesReferenceForEveryDTypeSizeAndView) {
  uint64_t seed = 300;
  for (const UnaryCase& c : kUnary) {
    for (DType dtype : {kFloat32, kBFloat16, kInt32, kInt64}) {
      if (is_integer(dtype) && !c.numeric) continue;
      for (int64_t n : kSizes) {
        const Tensor x = random_view(Shape{n}, ++seed, dtype, c.lo, c.hi);
        const Tensor out = c.op(x);
        ASSERT_EQ(out.dtype(), dtype);
        ASSERT_EQ(out.shape(), x.shape());
        EXPECT_TRUE(values_match(out, reference_unary(x, c.reference), c.rtol, 1e-30))
            << c.name << " " << dtype_name(dtype) << " n=" << n;
      }
    }
  }
}

TEST(ElementwiseUnaryTest, HigherRankShapesArePreserved) {
  const Tensor x = random_view(Shape{3, 5, 7}, 1, kFloat32);
  for (const UnaryCase& c : kUnary) EXPECT_EQ(c.op(x).shape(), (Shape{3, 5, 7})) << c.name;
  EXPECT_EQ(ops::exp(ones({})).shape(), Shape{});
  EXPECT_EQ(ops::exp(ones({0, 3})).shape(), (Shape{0, 3}));
}

// Max relative error of op over `count` evenly spaced float32 inputs in [lo, hi], against
// the double reference; elements whose reference is below `floor` compare absolutely.
double max_relative_error(const UnaryCase& c, double lo, double hi, int64_t count = 200001, double floor = 1e-30) {
  std::vector<float> inputs(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) inputs[i] = static_cast<float>(lo + (hi - lo) * i / (count - 1));
  const auto got = c.op(from_values(inputs, Shape{count})).to_vector<double>();
  double worst = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double want = c.reference(inputs[i]);
    worst = std::max(worst, std::abs(got[i] - want) / std::max(std::abs(want), floor));
  }
  return worst;
}

const UnaryCase& find_case(const char* name) {
  for (const UnaryCase& c : kUnary) {
    if (std::string(c.name) == name) return c;
  }
  throw Error(name);
}

// A float ulp is 6e-8 (relative) to 1.2e-7: these bounds are 1-6 ulp, measured with margin
// (the tanh GELU's far negative tail excepted, see vector_math.h).
TEST(ElementwiseUnaryTest, TranscendentalsAreAccurateOverTheirUsefulRange) {
  EXPECT_LT(max_relative_error(find_case("exp"), -86.98, 88.72), 2.5e-7);
  EXPECT_LT(max_relative_error(find_case("log"), 1e-30, 1e30), 2.5e-7);
  EXPECT_LT(max_relative_error(find_case("log"), 0.5, 2), 2.5e-7);
  EXPECT_LT(max_relative_error(find_case("tanh"), -10, 10), 3e-7);
  EXPECT_LT(max_relative_error(find_case("sigmoid"), -80, 30), 4e-7);
  EXPECT_LT(max_relative_error(find_case("softplus"), -80, 80), 4e-7);
  EXPECT_LT(max_relative_error(find_case("gelu_tanh"), -3, 10), 8e-7);
  EXPECT_LT(max_relative_error(find_case("gelu_tanh"), -5, 10), 1.5e-6);
  EXPECT_LT(max_relative_error(find_case("gelu_tanh"), -9, 10), 1e-5);
  EXPECT_LT(max_relative_error(find_case("gelu_erf"), -12, 10), 8e-7);
}

std::vector<float> apply(Tensor (*op)(const Tensor&), std::vector<float> inputs) {
  return op(from_values(inputs, Shape{static_cast<int64_t>(inputs.size())})).to_vector<float>();
}

TEST(ElementwiseUnaryTest, ExpSpecialValues) {
  const auto y = apply(ops::exp, {INFINITY, -INFINITY, 100.f, -100.f, 88.7f, 0.f, NAN, -87.5f, 88.73f, 1e30f});
  EXPECT_EQ(y[0], INFINITY);
  EXPECT_EQ(y[1], 0.f);
  EXPECT_EQ(y[2], INFINITY);  // overflow
  EXPECT_EQ(y[3], 0.f);       // underflow (results below 2^-125 flush to zero)
  EXPECT_NEAR(y[4], std::exp(double{88.7f}), 1e-6 * std::exp(double{88.7f}));
  EXPECT_EQ(y[5], 1.f);
  EXPECT_TRUE(std::isnan(y[6]));
  EXPECT_EQ(y[7], 0.f);         // below 2^-125: flushed
  EXPECT_EQ(y[8], INFINITY);    // just past FLT_MAX
  EXPECT_EQ(y[9], INFINITY);
}

TEST(ElementwiseUnaryTest, LogSpecialValues) {
  const auto y = apply(ops::log, {0.f, -0.f, -1.f, INFINITY, NAN, 1.f, 3.4e38f});
  EXPECT_EQ(y[0], -INFINITY);
  EXPECT_EQ(y[1], -INFINITY);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], INFINITY);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_EQ(y[5], 0.f);
  EXPECT_NEAR(y[6], std::log(3.4e38), 1e-5);
}

TEST(ElementwiseUnaryTest, SaturatingFunctionsSaturate) {
  const std::vector<float> big = {100.f, -100.f, INFINITY, -INFINITY, 1e30f, -1e30f};
  const auto s = apply(ops::sigmoid, big);
  EXPECT_EQ(s[0], 1.f);
  EXPECT_EQ(s[1], 0.f);
  EXPECT_EQ(s[2], 1.f);
  EXPECT_EQ(s[3], 0.f);
  const auto t = apply(ops::tanh, big);
  EXPECT_EQ(t, (std::vector<float>{1.f, -1.f, 1.f, -1.f, 1.f, -1.f}));
  EXPECT_TRUE(std::isnan(apply(ops::tanh, {NAN})[0]));
  EXPECT_TRUE(std::isnan(apply(ops::sigmoid, {NAN})[0]));
  // tanh keeps its sign and tiny values.
  const auto small = apply(ops::tanh, {1e-20f, -1e-20f, -0.f});
  EXPECT_EQ(small[0], 1e-20f);
  EXPECT_EQ(small[1], -1e-20f);
  EXPECT_TRUE(std::signbit(small[2]));
}

TEST(ElementwiseUnaryTest, SoftplusIsLinearForLargeInputsWithoutOverflow) {
  const auto y = apply(ops::softplus, {100.f, 1e30f, 3e38f, -100.f, INFINITY, -INFINITY, 0.f});
  EXPECT_EQ(y[0], 100.f);
  EXPECT_EQ(y[1], 1e30f);
  EXPECT_EQ(y[2], 3e38f);
  EXPECT_EQ(y[3], 0.f);
  EXPECT_EQ(y[4], INFINITY);
  EXPECT_EQ(y[5], 0.f);
  EXPECT_NEAR(y[6], std::log(2.0), 1e-7);
}

TEST(ElementwiseUnaryTest, GeluSpecialValues) {
  for (bool approximate : {true, false}) {
    const auto y =
        ops::gelu(from_values({0.f, 100.f, -100.f, INFINITY, 1e30f, NAN}), approximate).to_vector<float>();
    EXPECT_EQ(y[0], 0.f);
    EXPECT_EQ(y[1], 100.f);
    EXPECT_EQ(y[2], 0.f);
    EXPECT_EQ(y[3], INFINITY);
    EXPECT_EQ(y[4], 1e30f);
    EXPECT_TRUE(std::isnan(y[5]));
  }
}

TEST(ElementwiseUnaryTest, SqrtAndRsqrtSpecialValues) {
  const auto s = apply(ops::sqrt, {0.f, -1.f, INFINITY, 4.f});
  EXPECT_EQ(s[0], 0.f);
  EXPECT_TRUE(std::isnan(s[1]));
  EXPECT_EQ(s[2], INFINITY);
  EXPECT_EQ(s[3], 2.f);
  const auto r = apply(ops::rsqrt, {0.f, INFINITY, 4.f});
  EXPECT_EQ(r, (std::vector<float>{INFINITY, 0.f, 0.5f}));
}

TEST(ElementwiseUnaryTest, ReluPassesNaNAndMapsZeroToZero) {
  const auto y = apply(ops::relu, {NAN, 0.f, -0.5f, 2.f});
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 0.f);
  EXPECT_EQ(y[2], 0.f);
  EXPECT_EQ(y[3], 2.f);
}

TEST(ElementwiseUnaryErrorTest, FloatingOnlyOpsRejectIntegersAndBool) {
  EXPECT_THAT([] { ops::exp(ones({2}, kInt32)); },
              ThrowsMessage<DTypeError>(HasSubstr("exp: expected a floating dtype (float32 or bfloat16), got int32")));
  EXPECT_THAT([] { ops::gelu(ones({2}, kInt64)); },
              ThrowsMessage<DTypeError>(HasSubstr("gelu: expected a floating dtype (float32 or bfloat16), got int64")));
  for (auto op : {ops::log, ops::sqrt, ops::rsqrt, ops::sigmoid, ops::tanh, ops::softplus}) {
    EXPECT_THAT([&] { op(ones({2}, kBool)); }, ThrowsMessage<DTypeError>(HasSubstr("expected a floating dtype")));
  }
}

TEST(ElementwiseUnaryErrorTest, NumericOpsRejectBool) {
  EXPECT_THAT([] { ops::negative(ones({2}, kBool)); },
              ThrowsMessage<DTypeError>(
                  HasSubstr("negative: expected a numeric dtype (float32, bfloat16, int32 or int64), got bool")));
  for (auto op : {ops::abs, ops::square, ops::relu}) {
    EXPECT_THAT([&] { op(ones({2}, kBool)); }, ThrowsMessage<DTypeError>(HasSubstr("expected a numeric dtype")));
  }
}

TEST(ElementwiseUnaryErrorTest, UndefinedTensor) {
  EXPECT_THAT([] { ops::tanh(Tensor()); },
              ThrowsMessage<ValueError>(HasSubstr("tanh: argument x is an undefined tensor")));
}

}  // namespace
}  // namespace chorus
