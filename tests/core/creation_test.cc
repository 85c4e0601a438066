#include "chorus/core/creation.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;

TEST(CreationTest, FullOnesZerosInEveryDtype) {
  EXPECT_EQ(full({2, 2}, 3.5).to_vector<float>(), std::vector<float>(4, 3.5f));
  EXPECT_EQ(full({3}, 3.9, kInt32).to_vector<int>(), std::vector<int>(3, 3));
  EXPECT_EQ(ones({2}, kBool).to_vector<int>(), std::vector<int>(2, 1));
  EXPECT_EQ(full({2}, 0.5, kBFloat16).to_vector<float>(), std::vector<float>(2, 0.5f));
  EXPECT_EQ(zeros({0, 4}).numel(), 0);
  EXPECT_EQ(scalar(4).rank(), 0);
}

TEST(CreationTest, ArangeLikeNumPy) {
  EXPECT_EQ(arange(5).to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(1, 2, 0.25).to_vector<float>(), (std::vector<float>{1, 1.25, 1.5, 1.75}));
  EXPECT_EQ(arange(5, 0, -2, kInt64).to_vector<int64_t>(), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(arange(3, 3).numel(), 0);
  EXPECT_THAT([] { arange(0, 1, 0); }, ThrowsMessage<ValueError>(HasSubstr("arange: step must not be 0")));
}

TEST(CreationTest, FromValuesChecksCount) {
  Tensor t = from_values({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.dtype(), kInt32);
  EXPECT_EQ(t.shape(), Shape({2, 3}));
  EXPECT_THAT([] { from_values({1.f, 2.f, 3.f}, {2, 2}); },
              ThrowsMessage<ShapeError>(HasSubstr("from_values: 3 values cannot fill shape (2, 2) (4 elements)")));
}

}  // namespace
}  // namespace chorus
