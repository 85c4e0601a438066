// Tests for chorus/text/strings.h: tf.strings semantics on std::string.
#include "chorus/text/strings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "tests/testing/test_names.h"

namespace chorus::text::strings {
namespace {

using namespace testing::test_names;

TEST(StringsTest, LengthInBytesOrCharacters) {
  const std::string text = "h\u00e9llo";  // é is 2 bytes
  EXPECT_EQ(length(text), 6);
  EXPECT_EQ(length(text, Unit::kUtf8Char), 5);
  EXPECT_THROW((void)length("\xff", Unit::kUtf8Char), ValueError);
}

TEST(StringsTest, LowerAndUpperAsciiByDefault) {
  EXPECT_EQ(lower("\u00c9Cole"), "\u00c9cole");  // É is not ASCII: unchanged by default
  EXPECT_EQ(lower("\u00c9Cole", Encoding::kUtf8), "\u00e9cole");
  EXPECT_EQ(upper("abc\u00e9"), "ABC\u00e9");
  EXPECT_EQ(upper("abc\u00e9", Encoding::kUtf8), "ABC\u00c9");
}

TEST(StringsTest, SplitsOnWhitespaceOrSeparator) {
  EXPECT_THAT(split("  a b\t\tc\n"), ElementsAre("a", "b", "c"));
  EXPECT_TRUE(split("   ").empty());
  EXPECT_THAT(split("a,,b", ","), ElementsAre("a", "", "b"));
  EXPECT_THAT(split("a<>b<>c", "<>", 1), ElementsAre("a", "b<>c"));
  EXPECT_TRUE(split("", ",").empty());
  EXPECT_THAT([] { (void)split("a", ""); }, ThrowsMessage<ValueError>(HasSubstr("expected a non-empty separator")));
}

TEST(StringsTest, Joins) {
  EXPECT_EQ(join({"a", "b", "c"}, "-"), "a-b-c");
  EXPECT_EQ(join({}, "-"), "");
  EXPECT_EQ(join({"x", "y"}), "xy");
}

TEST(StringsTest, Substr) {
  EXPECT_EQ(substr("hello", 1, 3), "ell");
  EXPECT_EQ(substr("hello", -3, 2), "ll");
  EXPECT_EQ(substr("hello", 3, 10), "lo");  // clipped
  EXPECT_EQ(substr("h\u00e9llo", 1, 2, Unit::kUtf8Char), "\u00e9l");
  EXPECT_EQ(substr("h\u00e9llo", -2, 2, Unit::kUtf8Char), "lo");
  EXPECT_THAT([] { (void)substr("abc", 4, 1); },
              ThrowsMessage<IndexError>(HasSubstr("substr: pos 4 out of range for a string of 3 bytes")));
  EXPECT_THAT([] { (void)substr("abc", -4, 1, Unit::kUtf8Char); },
              ThrowsMessage<IndexError>(HasSubstr("pos -4 out of range for a string of 3 characters")));
}

TEST(StringsTest, ToNumber) {
  EXPECT_FLOAT_EQ(to_number("3.25"), 3.25f);
  EXPECT_FLOAT_EQ(to_number(" -1e3 "), -1000.0f);
  EXPECT_DOUBLE_EQ(to_number<double>("+0.5"), 0.5);
  EXPECT_EQ(to_number<int32_t>("42"), 42);
  EXPECT_EQ(to_number<int64_t>("-9000000000"), -9000000000LL);
  EXPECT_THAT([] { (void)to_number<int32_t>("12x"); },
              ThrowsMessage<ValueError>(HasSubstr("to_number: cannot parse \"12x\" as int32")));
  EXPECT_THAT([] { (void)to_number<int32_t>("3000000000"); }, ThrowsMessage<ValueError>(HasSubstr("as int32")));
  EXPECT_THAT([] { (void)to_number(""); }, ThrowsMessage<ValueError>(HasSubstr("as float32")));
}

}  // namespace
}  // namespace chorus::text::strings
