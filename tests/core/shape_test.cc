#include "chorus/core/shape.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;

TEST(ShapeTest, BasicsAndFormatting) {
  Shape s{64, 785};
  EXPECT_EQ(s.rank(), 2);
  EXPECT_EQ(s.numel(), 64 * 785);
  EXPECT_EQ(s.dim(-1), 785);
  EXPECT_EQ(s.to_string(), "(64, 785)");
  EXPECT_EQ(Shape{3}.to_string(), "(3,)");
  EXPECT_EQ(Shape{}.to_string(), "()");
  EXPECT_EQ(Shape{}.numel(), 1);
  EXPECT_EQ(Shape({0, 5}).numel(), 0);
}

TEST(ShapeTest, RejectsTooManyDimsAndNegativeDims) {
  EXPECT_THAT([] { Shape({1, 1, 1, 1, 1, 1, 1, 1, 1}); },
              ThrowsMessage<ShapeError>(HasSubstr("rank 9 exceeds the maximum rank 8")));
  EXPECT_THAT([] { Shape({2, -1}); }, ThrowsMessage<ShapeError>(HasSubstr("dimension -1 is negative")));
  EXPECT_NO_THROW(Shape({1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(ShapeTest, NormalizeAxis) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.normalize_axis(-1, "op"), 2);
  EXPECT_EQ(s.normalize_axis(0, "op"), 0);
  EXPECT_THAT([&] { s.normalize_axis(3, "softmax"); },
              ThrowsMessage<IndexError>(HasSubstr("softmax: axis 3 is out of range for shape (2, 3, 4) (rank 3)")));
  EXPECT_THAT([&] { s.normalize_axis(-4, "sum"); }, ThrowsMessage<IndexError>(HasSubstr("sum: axis -4")));
}

TEST(ShapeTest, BroadcastShapesFollowsNumPy) {
  EXPECT_EQ(broadcast_shapes({3, 1}, {1, 4}, "add"), Shape({3, 4}));
  EXPECT_EQ(broadcast_shapes({2, 3, 4}, {4}, "add"), Shape({2, 3, 4}));
  EXPECT_EQ(broadcast_shapes({}, {5, 2}, "add"), Shape({5, 2}));
  EXPECT_EQ(broadcast_shapes({0, 1}, {1, 3}, "add"), Shape({0, 3}));
  EXPECT_THAT([] { broadcast_shapes({2, 3}, {4}, "add"); },
              ThrowsMessage<ShapeError>(HasSubstr("add: shapes (2, 3) and (4,) do not broadcast")));
}

TEST(ShapeTest, BroadcastStridesAreZeroOnBroadcastAxes) {
  const auto s = broadcast_strides({3, 1}, {2, 3, 4});
  EXPECT_EQ(s[0], 0);
  EXPECT_EQ(s[1], 1);
  EXPECT_EQ(s[2], 0);
}

}  // namespace
}  // namespace chorus
