// Tensor printing. Every expected body below is what NumPy 1.24 prints for the same
// values with np.set_printoptions(precision=4) (bfloat16 and scalars: see tensor_format.cc).
#include <sstream>

#include "chorus/core/creation.h"
#include "chorus/core/tensor.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

// The text after the header line.
std::string body(const Tensor& t) {
  const std::string s = t.to_string();
  return s.substr(s.find('\n') + 1);
}

Tensor iota(const Shape& shape, DType dtype = kFloat32) {
  return arange(0, static_cast<double>(shape.numel()), 1, dtype).view(shape);
}

TEST(TensorFormatTest, SmallFloatMatrixWithHeader) {
  const Tensor t = from_values({1.f, 2.5f, -3.f, 0.125f, 4.f, 5.f}, {2, 3});
  EXPECT_EQ(t.to_string(),
            "Tensor(shape=(2, 3), dtype=float32, device=cpu:0)\n"
            "[[ 1.     2.5   -3.   ]\n"
            " [ 0.125  4.     5.   ]]");
}

TEST(TensorFormatTest, StreamPrintsTheSameAsToString) {
  const Tensor t = from_values({1.f, 2.f});
  std::ostringstream os;
  os << t;
  EXPECT_EQ(os.str(), t.to_string());
  EXPECT_EQ(body(t), "[1. 2.]");
}

TEST(TensorFormatTest, UndefinedTensor) {
  EXPECT_EQ(Tensor().to_string(), "Tensor(undefined)");
  std::ostringstream os;
  os << Tensor();
  EXPECT_EQ(os.str(), "Tensor(undefined)");
}

TEST(TensorFormatTest, FloatsRoundToFourDecimalsFromTheirExactValue) {
  // 0.00035f is 0.000349999..., 1.00005f is 1.0000499...: rounded down, as NumPy does;
  // 0.03125 is a tie: to even.
  EXPECT_EQ(body(from_values({0.00035f, 0.1f})), "[0.0003 0.1   ]");
  EXPECT_EQ(body(from_values({1.00005f, 0.03125f, -2.5f})), "[ 1.      0.0312 -2.5   ]");
  EXPECT_EQ(body(from_values({-0.f, 1.f})), "[-0.  1.]");
  // Integral values print every digit: float32 98056656's shortest form is 98056660.
  EXPECT_EQ(body(from_values({98056656.f})), "[98056656.]");
}

TEST(TensorFormatTest, ScientificWhenMagnitudesAreFarApart) {
  EXPECT_EQ(body(from_values({1e-5f, 1.f})), "[1.e-05 1.e+00]");
  EXPECT_EQ(body(from_values({123456.79f, 1.5f})), "[1.2346e+05 1.5000e+00]");
  EXPECT_EQ(body(from_values({1e10f, -1.f, 2.5e-3f})), "[ 1.0e+10 -1.0e+00  2.5e-03]");
}

TEST(TensorFormatTest, NonFiniteValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(body(from_values({nan, 1.5f, -inf})), "[ nan  1.5 -inf]");
  EXPECT_EQ(body(from_values({nan, inf})), "[nan inf]");
}

TEST(TensorFormatTest, LongRowsWrapAtSeventyFiveColumns) {
  Tensor t = Tensor::empty({30});
  for (int i = 0; i < 30; ++i) t.data<float>()[i] = static_cast<float>(i) / 7.f;
  EXPECT_EQ(body(t),
            "[0.     0.1429 0.2857 0.4286 0.5714 0.7143 0.8571 1.     1.1429 1.2857\n"
            " 1.4286 1.5714 1.7143 1.8571 2.     2.1429 2.2857 2.4286 2.5714 2.7143\n"
            " 2.8571 3.     3.1429 3.2857 3.4286 3.5714 3.7143 3.8571 4.     4.1429]");
}

TEST(TensorFormatTest, LargeTensorsAreSummarised) {
  // 2000 elements > 1000: three edge items per axis; the layout is chosen from the shown
  // elements only (max 1999 / min 1 > 1000: scientific).
  EXPECT_EQ(body(iota({40, 50})),
            "[[0.000e+00 1.000e+00 2.000e+00 ... 4.700e+01 4.800e+01 4.900e+01]\n"
            " [5.000e+01 5.100e+01 5.200e+01 ... 9.700e+01 9.800e+01 9.900e+01]\n"
            " [1.000e+02 1.010e+02 1.020e+02 ... 1.470e+02 1.480e+02 1.490e+02]\n"
            " ...\n"
            " [1.850e+03 1.851e+03 1.852e+03 ... 1.897e+03 1.898e+03 1.899e+03]\n"
            " [1.900e+03 1.901e+03 1.902e+03 ... 1.947e+03 1.948e+03 1.949e+03]\n"
            " [1.950e+03 1.951e+03 1.952e+03 ... 1.997e+03 1.998e+03 1.999e+03]]");
  EXPECT_EQ(body(iota({1001}, kInt32)), "[   0    1    2 ...  998  999 1000]");
  EXPECT_EQ(body(iota({1000}, kInt32)).find("..."), std::string::npos);  // 1000 is not summarised
}

TEST(TensorFormatTest, ScalarsPrintAsABareNumber) {
  EXPECT_EQ(scalar(1.5).to_string(), "Tensor(shape=(), dtype=float32, device=cpu:0)\n1.5");
  EXPECT_EQ(body(scalar(2.0)), "2.");
  EXPECT_EQ(body(scalar(-7, kInt64)), "-7");
  EXPECT_EQ(body(scalar(1, kBool)), "True");
  EXPECT_EQ(body(scalar(1.0 / 3.0, kBFloat16)), "0.334");  // bfloat16(1/3) = 0.333984375
}

TEST(TensorFormatTest, IntegersAreRightAligned) {
  EXPECT_EQ(body(from_values<int32_t>({1, -20, 300})), "[  1 -20 300]");
  EXPECT_EQ(from_values<int64_t>({5, -1234567890123, 0, 42}, {2, 2}).to_string(),
            "Tensor(shape=(2, 2), dtype=int64, device=cpu:0)\n"
            "[[             5 -1234567890123]\n"
            " [             0             42]]");
}

// Bytes print as numbers, as NumPy prints a uint8 array (not as characters).
TEST(TensorFormatTest, UInt8PrintsNumbers) {
  EXPECT_EQ(from_values<uint8_t>({0, 7, 255}, {1, 3}).to_string(),
            "Tensor(shape=(1, 3), dtype=uint8, device=cpu:0)\n"
            "[[  0   7 255]]");
}

TEST(TensorFormatTest, Bools) {
  const std::vector<bool> values{true, false, true, false, false, true};
  Tensor t = Tensor::empty({2, 3}, kBool);
  for (int i = 0; i < 6; ++i) t.data<bool>()[i] = values[i];
  EXPECT_EQ(t.to_string(),
            "Tensor(shape=(2, 3), dtype=bool, device=cpu:0)\n"
            "[[ True False  True]\n"
            " [False False  True]]");
}

TEST(TensorFormatTest, BFloat16PrintsItsShortestDecimal) {
  // bfloat16(0.1) is 0.10009765625 and 3.140625 is exact, but "0.1" and "3.14" read back
  // as the same bfloat16 values, so those are the digits shown.
  Tensor t = Tensor::empty({3}, kBFloat16);
  t.data<bfloat16>()[0] = bfloat16(0.1f);
  t.data<bfloat16>()[1] = bfloat16(3.140625f);
  t.data<bfloat16>()[2] = bfloat16(-2.f);
  EXPECT_EQ(t.to_string(), "Tensor(shape=(3,), dtype=bfloat16, device=cpu:0)\n[ 0.1   3.14 -2.  ]");
}

TEST(TensorFormatTest, EmptyTensors) {
  EXPECT_EQ(Tensor::empty({0, 3}).to_string(), "Tensor(shape=(0, 3), dtype=float32, device=cpu:0)\n[]");
  EXPECT_EQ(body(Tensor::empty({2, 0}, kInt32)), "[]");
}

TEST(TensorFormatTest, RankThreeBlocksAreSeparatedByBlankLines) {
  EXPECT_EQ(body(iota({2, 3, 4})),
            "[[[ 0.  1.  2.  3.]\n"
            "  [ 4.  5.  6.  7.]\n"
            "  [ 8.  9. 10. 11.]]\n"
            "\n"
            " [[12. 13. 14. 15.]\n"
            "  [16. 17. 18. 19.]\n"
            "  [20. 21. 22. 23.]]]");
}

TEST(TensorFormatTest, SummarisedRankThreeElidesWholeBlocks) {
  const std::string s = body(iota({7, 8, 20}));
  const std::string first = "[[[0.000e+00 1.000e+00 2.000e+00 ... 1.700e+01 1.800e+01 1.900e+01]\n";
  const std::string last = "\n  [1.100e+03 1.101e+03 1.102e+03 ... 1.117e+03 1.118e+03 1.119e+03]]]";
  EXPECT_EQ(s.substr(0, first.size()), first);
  EXPECT_NE(s.find("  ...\n  [1.000e+02"), std::string::npos);  // rows elided inside a block
  EXPECT_NE(s.find("]]\n\n ...\n\n [[6.400e+02"), std::string::npos);  // blocks elided
  EXPECT_EQ(s.substr(s.size() - last.size()), last);
}

TEST(TensorFormatTest, ViewsPrintTheirOwnElements) {
  const Tensor rows = iota({4, 3}, kInt32).first_axis_slice(1, 3);
  EXPECT_EQ(rows.to_string(), "Tensor(shape=(2, 3), dtype=int32, device=cpu:0)\n[[3 4 5]\n [6 7 8]]");
}

}  // namespace
}  // namespace chorus
