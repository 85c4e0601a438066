// DType names as Keras spells them, their inverse, element sizes, and the refusal of
// uint8 by the ops that compute (uint8 is a storage dtype: cast it first).
#include "chorus/core/dtype.h"

#include "chorus/core/creation.h"
#include "chorus/ops/elementwise.h"
#include "chorus/ops/matmul.h"
#include "chorus/ops/reduction.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;

TEST(DTypeTest, NamesParseBackAndSizes) {
  for (DType dtype : {kFloat32, kBFloat16, kInt32, kInt64, kBool, kString, kUInt8}) {
    EXPECT_EQ(parse_dtype(dtype_name(dtype)), dtype) << dtype_name(dtype);
  }
  EXPECT_EQ(dtype_name(kUInt8), "uint8");
  EXPECT_EQ(dtype_size(kUInt8), 1u);
  EXPECT_EQ(dtype_of<uint8_t>, kUInt8);
  EXPECT_FALSE(is_integer(kUInt8));  // not an index dtype
  EXPECT_FALSE(is_floating(kUInt8));
}

TEST(DTypeErrorTest, UnknownNameListsTheKnownOnes) {
  EXPECT_THAT([] { parse_dtype("float64"); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "unknown dtype 'float64'; expected one of float32, bfloat16, int32, int64, bool, string, uint8")));
}

TEST(DTypeErrorTest, ComputingOpsRefuseUInt8AndSayToCast) {
  const Tensor x = from_values<uint8_t>({1, 2, 3});
  const char* cast_first = "expected a float32, bfloat16, int32 or int64 tensor, got uint8 (cast it first";
  EXPECT_THAT([&] { ops::add(x, x); }, ThrowsMessage<DTypeError>(HasSubstr(std::string("add: ") + cast_first)));
  EXPECT_THAT([&] { ops::relu(x); }, ThrowsMessage<DTypeError>(HasSubstr(std::string("relu: ") + cast_first)));
  EXPECT_THAT([&] { ops::sum(x); }, ThrowsMessage<DTypeError>(HasSubstr(std::string("sum: ") + cast_first)));
  EXPECT_THAT([&] { ops::argmax(x); }, ThrowsMessage<DTypeError>(HasSubstr(std::string("argmax: ") + cast_first)));
  EXPECT_THAT([&] { ops::matmul(x.view({1, 3}), x.view({3, 1})); },
              ThrowsMessage<DTypeError>(HasSubstr("matmul: expected float32 or bfloat16 operands, got uint8")));
}

TEST(DTypeTest, UInt8ComparesForEqualityAndSelects) {
  const Tensor a = from_values<uint8_t>({1, 200, 3}), b = from_values<uint8_t>({1, 2, 3});
  EXPECT_EQ(ops::equal(a, b).to_vector<int>(), (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(ops::not_equal(a, b).to_vector<int>(), (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(ops::where(ops::equal(a, b), b, a).to_vector<int>(), (std::vector<int>{1, 200, 3}));
}

}  // namespace
}  // namespace chorus
