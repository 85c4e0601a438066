// where, clip and cast against plain reference loops: every dtype, odd sizes up to the
// threaded path, offset views, broadcasting, special values, and the error messages.
#include <climits>
#include <cmath>

#include "chorus/ops/elementwise.h"
#include "tests/ops/elementwise_reference.h"
#include "tests/testing/test_names.h"

namespace chorus {
namespace {

using namespace testing::test_names;
using testing::broadcast_source;
using testing::kSizes;
using testing::random_of;
using testing::random_view;
using testing::values_match;

constexpr DType kAllDTypes[] = {kFloat32, kBFloat16, kInt32, kInt64, kBool, kUInt8};

std::vector<double> reference_where(const Tensor& c, const Tensor& x, const Tensor& y) {
  const Shape out = broadcast_shapes(broadcast_shapes(c.shape(), x.shape(), "t"), y.shape(), "t");
  const auto vc = c.to_vector<double>(), vx = x.to_vector<double>(), vy = y.to_vector<double>();
  std::vector<double> result(static_cast<size_t>(out.numel()));
  for (int64_t i = 0; i < out.numel(); ++i) {
    result[i] = vc[broadcast_source(i, out, c.shape())] != 0 ? vx[broadcast_source(i, out, x.shape())]
                                                             : vy[broadcast_source(i, out, y.shape())];
  }
  return result;
}

TEST(ElementwiseWhereTest, MatchesReferenceForEveryDTypeSizeAndView) {
  uint64_t seed = 400;
  for (DType dtype : kAllDTypes) {
    for (int64_t n : kSizes) {
      const Tensor c = random_view(Shape{n}, ++seed, kBool);
      const Tensor x = random_view(Shape{n}, ++seed, dtype, -100, 100);
      const Tensor y = random_of(Shape{n}, ++seed, dtype, -100, 100);
      const Tensor out = ops::where(c, x, y);
      ASSERT_EQ(out.dtype(), dtype);
      EXPECT_TRUE(values_match(out, reference_where(c, x, y))) << dtype_name(dtype) << " n=" << n;
    }
  }
}

TEST(ElementwiseWhereTest, AllThreeBroadcast) {
  const Shape shapes[][3] = {
      {Shape{3, 1}, Shape{1, 4}, Shape{}},    {Shape{}, Shape{3, 4}, Shape{4}},
      {Shape{4}, Shape{3, 1}, Shape{3, 4}},   {Shape{2, 1, 5}, Shape{3, 1}, Shape{1}},
      {Shape{200, 1}, Shape{1, 300}, Shape{300}},  // threaded
      {Shape{1}, Shape{7}, Shape{7}},         {Shape{0, 2}, Shape{2}, Shape{}},
  };
  uint64_t seed = 450;
  for (const auto& s : shapes) {
    for (DType dtype : {kFloat32, kInt64, kBFloat16}) {
      const Tensor c = random_of(s[0], ++seed, kBool), x = random_of(s[1], ++seed, dtype, -9, 9),
                   y = random_of(s[2], ++seed, dtype, -9, 9);
      EXPECT_TRUE(values_match(ops::where(c, x, y), reference_where(c, x, y)))
          << s[0].to_string() << " " << s[1].to_string() << " " << s[2].to_string() << " " << dtype_name(dtype);
    }
  }
}

TEST(ElementwiseWhereErrorTest, ConditionMustBeBool) {
  EXPECT_THAT([] { ops::where(ones({2}), ones({2}), ones({2})); },
              ThrowsMessage<DTypeError>(HasSubstr("where: expected a bool condition, got dtype float32")));
}

TEST(ElementwiseWhereErrorTest, BranchesMustShareADTypeAndBroadcast) {
  EXPECT_THAT([] { ops::where(ones({2}, kBool), ones({2}), ones({2}, kInt32)); },
              ThrowsMessage<DTypeError>(HasSubstr("where: dtypes differ: float32 and int32")));
  EXPECT_THAT([] { ops::where(ones({2}, kBool), ones({3}), ones({3})); },
              ThrowsMessage<ShapeError>(HasSubstr("where: shapes (2,) and (3,) do not broadcast")));
  EXPECT_THAT([] { ops::where(Tensor(), ones({3}), ones({3})); },
              ThrowsMessage<ValueError>(HasSubstr("where: argument condition is an undefined tensor")));
}

TEST(ElementwiseClipTest, MatchesReferenceForEveryDTypeSizeAndView) {
  uint64_t seed = 500;
  for (DType dtype : testing::kNumericDTypes) {
    for (int64_t n : kSizes) {
      const Tensor x = random_view(Shape{n}, ++seed, dtype, -100, 100);
      EXPECT_TRUE(values_match(ops::clip(x, -20, 30), testing::reference_unary(x, [](double v) {
                                 return std::clamp(v, -20.0, 30.0);
                               })))
          << dtype_name(dtype) << " n=" << n;
    }
  }
}

TEST(ElementwiseClipTest, EdgeCases) {
  // Integers clip to the integers inside the bounds; bounds beyond the type saturate.
  EXPECT_EQ(ops::clip(from_values<int32_t>({-5, -2, 0, 3, 9}), -2.5, 3.7).to_vector<int32_t>(),
            (std::vector<int32_t>{-2, -2, 0, 3, 3}));
  EXPECT_EQ(ops::clip(from_values<int32_t>({INT_MIN, INT_MAX}), -1e300, 1e300).to_vector<int32_t>(),
            (std::vector<int32_t>{INT_MIN, INT_MAX}));
  // Equal bounds give a constant; NaN passes through.
  EXPECT_EQ(ops::clip(from_values({-1.f, 5.f}), 2, 2).to_vector<float>(), (std::vector<float>{2.f, 2.f}));
  EXPECT_TRUE(std::isnan(ops::clip(from_values({NAN}), 0, 1).item<float>()));
}

TEST(ElementwiseClipErrorTest, BoundsAndDTypes) {
  EXPECT_THAT([] { ops::clip(ones({2}), 2, 1); },
              ThrowsMessage<ValueError>(
                  HasSubstr("clip: expected min_value <= max_value. Received: min_value=2, max_value=1")));
  EXPECT_THAT([] { ops::clip(ones({2}), NAN, 1); }, ThrowsMessage<ValueError>(HasSubstr("clip: expected min_value")));
  EXPECT_THAT([] { ops::clip(ones({2}, kBool), 0, 1); },
              ThrowsMessage<DTypeError>(HasSubstr("clip: expected a numeric dtype")));
}

// The conversion rules, written out for one value of dtype `from`.
double reference_cast(double v, DType from, DType to) {
  switch (to) {
    case kFloat32: return static_cast<float>(v);
    case kBFloat16: return static_cast<float>(bfloat16(static_cast<float>(v)));
    case kBool: return v != 0 ? 1 : 0;
    case kInt32:
    case kInt64: {
      const double lo = to == kInt32 ? INT32_MIN : static_cast<double>(INT64_MIN);
      const double hi = to == kInt32 ? INT32_MAX : static_cast<double>(INT64_MAX);
      if (std::isnan(v)) return 0;
      return std::clamp(std::trunc(v), lo, hi);
    }
    case kUInt8: {
      if (std::isnan(v)) return 0;
      if (is_floating(from)) return std::clamp(std::trunc(v), 0.0, 255.0);  // floats saturate
      return static_cast<uint8_t>(static_cast<int64_t>(v));                // integers wrap modulo 256
    }
    case kString: break;  // cast refuses strings
  }
  return 0;
}

TEST(ElementwiseCastTest, EveryPairOfDTypesMatchesReference) {
  uint64_t seed = 600;
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      for (int64_t n : kSizes) {
        const Tensor x = random_view(Shape{n}, ++seed, from, -300, 300);
        const Tensor out = ops::cast(x, to);
        ASSERT_EQ(out.dtype(), to);
        ASSERT_EQ(out.shape(), x.shape());
        EXPECT_TRUE(values_match(out, testing::reference_unary(x, [&](double v) { return reference_cast(v, from, to); }),
                                 0, 0))
            << dtype_name(from) << " -> " << dtype_name(to) << " n=" << n;
      }
    }
  }
}

TEST(ElementwiseCastTest, FloatToIntTruncatesAndSaturates) {
  const Tensor x = from_values({3.9f, -3.9f, NAN, 1e20f, -1e20f, INFINITY, 2147483520.f, -2147483648.f});
  EXPECT_EQ(ops::cast(x, kInt32).to_vector<int32_t>(),
            (std::vector<int32_t>{3, -3, 0, INT_MAX, INT_MIN, INT_MAX, 2147483520, INT_MIN}));
  EXPECT_EQ(ops::cast(x, kInt64).to_vector<int64_t>(),
            (std::vector<int64_t>{3, -3, 0, INT64_MAX, INT64_MIN, INT64_MAX, 2147483520, -2147483648}));
  // Integer narrowing wraps; NaN is true.
  EXPECT_EQ(ops::cast(from_values<int64_t>({(int64_t{1} << 32) + 5}), kInt32).item<int32_t>(), 5);
  EXPECT_TRUE(ops::cast(from_values({NAN}), kBool).item<bool>());
}

// Keras's uint8 (MNIST's pixels): floats saturate to [0, 255] (NumPy's astype on x86 would
// wrap -1 to 255), integers wrap modulo 256 as NumPy's astype, and every byte converts to
// float32, bfloat16, int32 and int64 and back unchanged.
TEST(ElementwiseCastTest, UInt8SaturatesFloatsWrapsIntegersAndRoundTrips) {
  const Tensor floats = from_values({0.f, 254.9f, 255.f, 256.f, -0.9f, -1.f, 300.f, NAN, INFINITY, -INFINITY});
  EXPECT_EQ(ops::cast(floats, kUInt8).to_vector<int>(), (std::vector<int>{0, 254, 255, 255, 0, 0, 255, 0, 255, 0}));
  EXPECT_EQ(ops::cast(ops::cast(floats, kBFloat16), kUInt8).to_vector<int>(),
            (std::vector<int>{0, 255, 255, 255, 0, 0, 255, 0, 255, 0}));  // 254.9 rounds to 255 in bfloat16
  EXPECT_EQ(ops::cast(from_values<int32_t>({-1, 256, 300, 255}), kUInt8).to_vector<int>(),
            (std::vector<int>{255, 0, 44, 255}));
  EXPECT_EQ(ops::cast(from_values<int64_t>({-2, (int64_t{1} << 40) + 7}), kUInt8).to_vector<int>(),
            (std::vector<int>{254, 7}));
  Tensor bytes = Tensor::empty({256}, kUInt8);
  for (int i = 0; i < 256; ++i) bytes.data<uint8_t>()[i] = static_cast<uint8_t>(i);
  for (DType via : {kFloat32, kBFloat16, kInt32, kInt64}) {
    const Tensor there = ops::cast(bytes, via);
    EXPECT_EQ(there.to_vector<double>()[255], 255.0) << dtype_name(via);
    EXPECT_TRUE(array_equal(ops::cast(there, kUInt8), bytes)) << dtype_name(via);
  }
  EXPECT_EQ(ops::cast(from_values<bool>({true, false}), kUInt8).to_vector<int>(), (std::vector<int>{1, 0}));
  EXPECT_EQ(ops::cast(bytes, kBool).to_vector<int>()[0], 0);
  EXPECT_EQ(ops::cast(bytes, kBool).to_vector<int>()[2], 1);
}

TEST(ElementwiseCastTest, SameDTypeIsAViewOnTheSameStorage) {
  const Tensor x = from_values({1.f, 2.f});
  const Tensor y = ops::cast(x, kFloat32);
  EXPECT_TRUE(y.shares_storage(x));
  EXPECT_FALSE(y.same(x));
  EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
}

TEST(ElementwiseCastErrorTest, UndefinedTensor) {
  EXPECT_THAT([] { ops::cast(Tensor(), kInt32); },
              ThrowsMessage<ValueError>(HasSubstr("cast: argument x is an undefined tensor")));
}

}  // namespace
}  // namespace chorus
