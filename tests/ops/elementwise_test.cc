// Binary elementwise ops (arithmetic, power, comparisons) against plain reference loops in
// double: every accepted dtype, odd sizes up to the threaded path, offset views, every
// broadcasting pattern, and every error message.
#include "chorus/ops/elementwise.h"

#include <climits>
#include <cmath>

#include "chorus/core/creation.h"
#include "chorus/ops/operators.h"
#include "tests/ops/elementwise_reference.h"
#include "tests/testing/test_names.h"

namespace chorus {
namespace {

using namespace testing::test_names;
using testing::kNumericDTypes;
using testing::kSizes;
using testing::random_of;
using testing::random_view;
using testing::reference_binary;
using testing::values_match;

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);
using ReferenceFn = double (*)(double, double, bool integer);

struct BinaryCase {
  const char* name;
  BinaryFn op;
  ReferenceFn reference;
  double b_lo = -100, b_hi = 100;  // divisor range kept away from zero for divide
};

const BinaryCase kArithmetic[] = {
    {"add", ops::add, [](double a, double b, bool) { return a + b; }},
    {"subtract", ops::subtract, [](double a, double b, bool) { return a - b; }},
    {"multiply", ops::multiply, [](double a, double b, bool) { return a * b; }},
    {"divide", ops::divide, [](double a, double b, bool integer) { return integer ? std::trunc(a / b) : a / b; },
     1, 50},
    {"maximum", ops::maximum, [](double a, double b, bool) { return std::max(a, b); }},
    {"minimum", ops::minimum, [](double a, double b, bool) { return std::min(a, b); }},
};

// Flips the sign of odd elements in place (divisors of both signs, none near zero).
void negate_every_other(const Tensor& t) {
  visit_dtype(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (!std::is_same_v<T, bool>) {
      T* data = t.data<T>();
      for (int64_t i = 1; i < t.numel(); i += 2) {
        if constexpr (std::is_same_v<T, bfloat16>) {
          data[i] = bfloat16(-static_cast<float>(data[i]));
        } else {
          data[i] = static_cast<T>(-data[i]);
        }
      }
    }
  });
}

TEST(ElementwiseBinaryTest, ArithmeticMatchesReferenceForEveryDTypeAndSize) {
  uint64_t seed = 1;
  for (const BinaryCase& c : kArithmetic) {
    for (DType dtype : kNumericDTypes) {
      for (int64_t n : kSizes) {
        for (bool views : {false, true}) {
          auto make = views ? random_view : random_of;
          const Tensor a = make(Shape{n}, ++seed, dtype, -100, 100, false);
          const Tensor b = make(Shape{n}, ++seed, dtype, c.b_lo, c.b_hi, false);
          if (c.op == ops::divide) negate_every_other(b);
          const Tensor out = c.op(a, b);
          ASSERT_EQ(out.dtype(), dtype);
          ASSERT_EQ(out.shape(), Shape{n});
          const bool integer = is_integer(dtype);
          EXPECT_TRUE(values_match(out, reference_binary(a, b, [&](double x, double y) {
                                     return c.reference(x, y, integer);
                                   })))
              << c.name << " " << dtype_name(dtype) << " n=" << n << (views ? " (views)" : "");
        }
      }
    }
  }
}

// bfloat16 computes in float32 and rounds once: bit-exact against that recipe.
TEST(ElementwiseBinaryTest, BFloat16ComputesInFloatAndRoundsOnce) {
  const Tensor a = random_view(Shape{1023}, 30, kBFloat16, -100, 100);
  const Tensor b = random_view(Shape{1023}, 31, kBFloat16, 1, 100);
  const bfloat16 *pa = a.data<bfloat16>(), *pb = b.data<bfloat16>();
  const std::pair<BinaryFn, float (*)(float, float)> cases[] = {
      {ops::add, [](float x, float y) { return x + y; }},
      {ops::subtract, [](float x, float y) { return x - y; }},
      {ops::multiply, [](float x, float y) { return x * y; }},
      {ops::divide, [](float x, float y) { return x / y; }},
  };
  for (const auto& [op, f] : cases) {
    const Tensor out = op(a, b);
    const bfloat16* po = out.data<bfloat16>();
    for (int64_t i = 0; i < 1023; ++i) {
      ASSERT_EQ(po[i].bits, bfloat16(f(static_cast<float>(pa[i]), static_cast<float>(pb[i]))).bits) << i;
    }
  }
}

TEST(ElementwiseBinaryTest, PowerMatchesStdPow) {
  for (DType dtype : testing::kFloatDTypes) {
    for (int64_t n : kSizes) {
      const Tensor a = random_view(Shape{n}, 11, dtype, 0.1, 3);
      const Tensor b = random_view(Shape{n}, 12, dtype, -3, 3);
      EXPECT_TRUE(values_match(ops::power(a, b), reference_binary(a, b, [](double x, double y) {
                                 return static_cast<double>(std::pow(static_cast<float>(x), static_cast<float>(y)));
                               })))
          << dtype_name(dtype) << " n=" << n;
    }
  }
  // Negative bases with integer exponents, zero, and NaN follow std::pow.
  const Tensor a = from_values({-2.f, -2.f, 0.f, 0.f, -8.f, 4.f});
  const Tensor b = from_values({3.f, 2.f, 0.f, -1.f, 0.5f, 0.5f});
  const auto got = ops::power(a, b).to_vector<float>();
  EXPECT_EQ(got[0], -8.f);
  EXPECT_EQ(got[1], 4.f);
  EXPECT_EQ(got[2], 1.f);
  EXPECT_EQ(got[3], INFINITY);
  EXPECT_TRUE(std::isnan(got[4]));
  EXPECT_EQ(got[5], 2.f);
}

TEST(ElementwiseBinaryTest, IntegerDivisionTruncatesTowardZeroAndWraps) {
  const Tensor a = from_values<int32_t>({7, -7, 7, -7, INT_MIN, 5});
  const Tensor b = from_values<int32_t>({2, 2, -2, -2, -1, 7});
  EXPECT_EQ(ops::divide(a, b).to_vector<int32_t>(), (std::vector<int32_t>{3, -3, -3, 3, INT_MIN, 0}));
  const Tensor a64 = from_values<int64_t>({7, -7, INT64_MIN, INT64_MAX});
  const Tensor b64 = from_values<int64_t>({-2, 2, -1, 3});
  EXPECT_EQ(ops::divide(a64, b64).to_vector<int64_t>(),
            (std::vector<int64_t>{-3, -3, INT64_MIN, INT64_MAX / 3}));
}

TEST(ElementwiseBinaryTest, IntegerArithmeticWrapsOnOverflow) {
  const Tensor big = from_values<int32_t>({INT_MAX, INT_MIN});
  EXPECT_EQ(ops::add(big, from_values<int32_t>({1, -1})).to_vector<int32_t>(),
            (std::vector<int32_t>{INT_MIN, INT_MAX}));
  EXPECT_EQ(ops::multiply(big, from_values<int32_t>({2, 2})).to_vector<int32_t>(), (std::vector<int32_t>{-2, 0}));
  EXPECT_EQ(ops::negative(big).to_vector<int32_t>(), (std::vector<int32_t>{-INT_MAX, INT_MIN}));
}

TEST(ElementwiseBinaryTest, MaximumAndMinimumPropagateNaN) {
  const Tensor a = from_values({NAN, 1.f, NAN});
  const Tensor b = from_values({1.f, NAN, NAN});
  for (BinaryFn op : {ops::maximum, ops::minimum}) {
    for (float v : op(a, b).to_vector<float>()) EXPECT_TRUE(std::isnan(v));
  }
}

struct ComparisonCase {
  const char* name;
  BinaryFn op;
  bool (*reference)(double, double);
  bool takes_bool;
};

const ComparisonCase kComparisons[] = {
    {"equal", ops::equal, [](double a, double b) { return a == b; }, true},
    {"not_equal", ops::not_equal, [](double a, double b) { return a != b; }, true},
    {"less", ops::less, [](double a, double b) { return a < b; }, false},
    {"less_equal", ops::less_equal, [](double a, double b) { return a <= b; }, false},
    {"greater", ops::greater, [](double a, double b) { return a > b; }, false},
    {"greater_equal", ops::greater_equal, [](double a, double b) { return a >= b; }, false},
};

TEST(ElementwiseBinaryTest, ComparisonsGiveBoolForEveryDType) {
  uint64_t seed = 100;
  for (const ComparisonCase& c : kComparisons) {
    for (DType dtype : {kFloat32, kBFloat16, kInt32, kInt64, kBool}) {
      if (dtype == kBool && !c.takes_bool) continue;
      for (int64_t n : kSizes) {
        // Whole numbers in [-3, 3): plenty of ties.
        const Tensor a = random_view(Shape{n}, ++seed, dtype, -3, 3, true);
        const Tensor b = random_of(Shape{n}, ++seed, dtype, -3, 3, true);
        const Tensor out = c.op(a, b);
        ASSERT_EQ(out.dtype(), kBool);
        EXPECT_TRUE(values_match(out, reference_binary(a, b, [&](double x, double y) {
                                   return c.reference(x, y) ? 1.0 : 0.0;
                                 })))
            << c.name << " " << dtype_name(dtype) << " n=" << n;
      }
    }
  }
  // NaN compares unequal to everything, itself included.
  const Tensor nan = from_values({NAN});
  EXPECT_FALSE(ops::equal(nan, nan).item<bool>());
  EXPECT_TRUE(ops::not_equal(nan, nan).item<bool>());
  EXPECT_FALSE(ops::less_equal(nan, nan).item<bool>());
}

// Every broadcasting pattern the kernels special-case, and general ones.
const std::pair<Shape, Shape> kBroadcastShapes[] = {
    {Shape{5, 7}, Shape{7}},              // row
    {Shape{5, 7}, Shape{5, 1}},           // column
    {Shape{7}, Shape{5, 7}},              // row, on the left
    {Shape{5, 1}, Shape{5, 7}},           // column, on the left
    {Shape{3, 1}, Shape{1, 4}},           // both sides
    {Shape{}, Shape{4, 3}},               // scalar
    {Shape{4, 3}, Shape{}},               // scalar, on the right
    {Shape{1}, Shape{1023}},              // one-element rank 1
    {Shape{2, 3, 4}, Shape{3, 1}},        // rank mismatch
    {Shape{4, 1, 3}, Shape{1, 5, 1}},     // alternating
    {Shape{2, 1, 3, 1}, Shape{2, 4, 3, 5}},
    {Shape{1, 1}, Shape{1}},              // one element
    {Shape{0, 3}, Shape{3}},              // empty
    {Shape{300, 257}, Shape{257}},        // row, threaded
    {Shape{300, 257}, Shape{300, 1}},     // column, threaded
    {Shape{64, 1, 33}, Shape{1, 50, 33}}, // general, threaded
};

TEST(ElementwiseBinaryTest, BroadcastingMatchesReference) {
  uint64_t seed = 200;
  for (const auto& [sa, sb] : kBroadcastShapes) {
    for (DType dtype : {kFloat32, kInt32}) {
      const Tensor a = random_of(sa, ++seed, dtype, -50, 50);
      const Tensor b = random_of(sb, ++seed, dtype, -50, 50);
      for (const BinaryCase& c : kArithmetic) {
        if (c.op == ops::divide) continue;
        const Tensor out = c.op(a, b);
        ASSERT_EQ(out.shape(), broadcast_shapes(sa, sb, "test"));
        EXPECT_TRUE(values_match(out, reference_binary(a, b, [&](double x, double y) {
                                   return c.reference(x, y, is_integer(dtype));
                                 })))
            << c.name << " " << sa.to_string() << " with " << sb.to_string() << " " << dtype_name(dtype);
      }
      EXPECT_TRUE(values_match(ops::less(a, b), reference_binary(a, b, [](double x, double y) {
                                 return x < y ? 1.0 : 0.0;
                               })))
          << sa.to_string() << " < " << sb.to_string();
    }
  }
}

TEST(ElementwiseBinaryTest, OutputIsFreshAndInputsAreUntouched) {
  const Tensor a = from_values({1.f, 2.f}), b = from_values({3.f, 4.f});
  const Tensor out = ops::add(a, b);
  EXPECT_FALSE(out.shares_storage(a));
  EXPECT_FALSE(out.shares_storage(b));
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{1.f, 2.f}));
}

TEST(ElementwiseBinaryTest, OperatorsUseTheOps) {
  const Tensor a = from_values({6.f, 8.f});
  EXPECT_EQ((a / 2.0 - 1.0).to_vector<float>(), (std::vector<float>{2.f, 3.f}));
  EXPECT_EQ((10.0 - a * a).to_vector<float>(), (std::vector<float>{-26.f, -54.f}));
}

TEST(ElementwiseBinaryErrorTest, DTypesMustMatch) {
  EXPECT_THAT([] { ops::add(ones({2}), ones({2}, kInt32)); },
              ThrowsMessage<DTypeError>(HasSubstr("add: dtypes differ: float32 and int32")));
  EXPECT_THAT([] { ops::less(ones({2}, kBFloat16), ones({2})); },
              ThrowsMessage<DTypeError>(HasSubstr("less: dtypes differ: bfloat16 and float32")));
}

TEST(ElementwiseBinaryErrorTest, ShapesMustBroadcast) {
  EXPECT_THAT([] { ops::add(ones({2, 3}), ones({4})); },
              ThrowsMessage<ShapeError>(HasSubstr("add: shapes (2, 3) and (4,) do not broadcast")));
  EXPECT_THAT([] { ops::greater(ones({5, 2}), ones({3, 1})); },
              ThrowsMessage<ShapeError>(HasSubstr("greater: shapes (5, 2) and (3, 1) do not broadcast")));
}

TEST(ElementwiseBinaryErrorTest, ArithmeticRejectsBool) {
  EXPECT_THAT([] { ops::multiply(ones({2}, kBool), ones({2}, kBool)); },
              ThrowsMessage<DTypeError>(
                  HasSubstr("multiply: expected a numeric dtype (float32, bfloat16, int32 or int64), got bool")));
  EXPECT_THAT([] { ops::less(ones({2}, kBool), ones({2}, kBool)); },
              ThrowsMessage<DTypeError>(HasSubstr("less: expected a numeric dtype")));
}

TEST(ElementwiseBinaryErrorTest, PowerIsFloatingOnly) {
  EXPECT_THAT([] { ops::power(ones({2}, kInt32), ones({2}, kInt32)); },
              ThrowsMessage<DTypeError>(HasSubstr("power: expected a floating dtype (float32 or bfloat16), got int32")));
}

TEST(ElementwiseBinaryErrorTest, IntegerDivisionByZero) {
  EXPECT_THAT([] { ops::divide(ones({3}, kInt64), from_values<int64_t>({1, 0, 2})); },
              ThrowsMessage<ValueError>(HasSubstr("divide: integer division by zero")));
  // Floats divide by zero to inf, as IEEE says.
  EXPECT_EQ(ops::divide(ones({1}), zeros({1})).item<float>(), INFINITY);
}

TEST(ElementwiseBinaryErrorTest, UndefinedTensors) {
  EXPECT_THAT([] { ops::add(Tensor(), ones({2})); },
              ThrowsMessage<ValueError>(HasSubstr("add: argument a is an undefined tensor")));
  EXPECT_THAT([] { ops::equal(ones({2}), Tensor()); },
              ThrowsMessage<ValueError>(HasSubstr("equal: argument b is an undefined tensor")));
}

}  // namespace
}  // namespace chorus
