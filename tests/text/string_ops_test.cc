// tf.strings on string tensors: each op's values on hand-made tensors, shapes kept, and the
// errors for tensors of other dtypes and bad arguments.
#include "chorus/text/string_ops.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/creation.h"
#include "chorus/core/error.h"
#include "tests/testing/test_names.h"

namespace chorus::text {
namespace {

using namespace testing::test_names;

std::vector<std::string> values_of(const Tensor& t) { return {t.strings().begin(), t.strings().end()}; }

TEST(StringOpsTest, LengthCountsBytesOrCharactersAndKeepsTheShape) {
  const Tensor words = Tensor::from_strings(Shape{2, 2}, {"", "abc", "caf\xc3\xa9", "\xe4\xb8\xad"});
  const Tensor bytes = length(words);
  EXPECT_EQ(bytes.dtype(), kInt32);
  EXPECT_EQ(bytes.shape(), (Shape{2, 2}));
  EXPECT_THAT(bytes.to_vector<int32_t>(), ElementsAre(0, 3, 5, 3));
  EXPECT_THAT(length(words, strings::Unit::kUtf8Char).to_vector<int32_t>(), ElementsAre(0, 3, 4, 1));
}

TEST(StringOpsTest, CaseMappingAsciiByDefaultUnicodeOnRequest) {
  const Tensor words = Tensor::from_strings({"Hello", "\xc3\x89T\xc3\x89"});  // "ÉTÉ"
  EXPECT_THAT(values_of(lower(words)), ElementsAre("hello", "\xc3\x89t\xc3\x89"));
  EXPECT_THAT(values_of(lower(words, strings::Encoding::kUtf8)), ElementsAre("hello", "\xc3\xa9t\xc3\xa9"));
  EXPECT_THAT(values_of(upper(words)), ElementsAre("HELLO", "\xc3\x89T\xc3\x89"));
}

TEST(StringOpsTest, RegexReplaceAndFullMatch) {
  const Tensor lines = Tensor::from_strings({"a @,@ b", "no marks", "@.@"});
  EXPECT_THAT(values_of(regex_replace(lines, " @([,.])@ ", "\\1")), ElementsAre("a,b", "no marks", "@.@"));
  EXPECT_THAT(values_of(regex_replace(Tensor::from_strings({"aaa"}), "a", "b", /*replace_global=*/false)),
              ElementsAre("baa"));
  const Tensor matched = regex_full_match(lines, "[a-z ]+");
  EXPECT_EQ(matched.dtype(), kBool);
  EXPECT_THAT(matched.to_vector<bool>(), ElementsAre(false, true, false));
  EXPECT_THAT([&] { (void)regex_full_match(lines, "("); }, ThrowsMessage<ValueError>(HasSubstr("(")));
}

TEST(StringOpsTest, SplitMakesOneRaggedRowPerElement) {
  const RaggedTensor words = split(Tensor::from_strings({"  the cat ", "", "sat"}));
  EXPECT_EQ(words.nrows(), 3);
  EXPECT_THAT(words.row_lengths().to_vector<int64_t>(), ElementsAre(2, 0, 1));
  EXPECT_THAT(values_of(words.values()), ElementsAre("the", "cat", "sat"));
  const RaggedTensor fields = split(Tensor::from_strings({"a,,b", "c"}), ",");
  EXPECT_THAT(fields.row_lengths().to_vector<int64_t>(), ElementsAre(3, 1));
  EXPECT_THAT(values_of(fields.values()), ElementsAre("a", "", "b", "c"));
  EXPECT_THAT([] { (void)split(Tensor::from_strings(Shape{1, 1}, {"a b"})); },
              ThrowsMessage<ShapeError>(HasSubstr("strings.split: expected a rank-1 string tensor, got shape (1, 1)")));
}

TEST(StringOpsTest, JoinConcatenatesElementWise) {
  const Tensor a = Tensor::from_strings({"x", "y"}), b = Tensor::from_strings({"1", "2"});
  EXPECT_THAT(values_of(join({a, b}, "-")), ElementsAre("x-1", "y-2"));
  EXPECT_THAT([&] { (void)join({a, Tensor::from_strings({"1"})}); },
              ThrowsMessage<ShapeError>(HasSubstr("strings.join: input 1 has shape (1,), expected (2,) as input 0")));
  EXPECT_THAT([] { (void)join({}); }, ThrowsMessage<ValueError>(HasSubstr("expected at least one tensor")));
}

TEST(StringOpsTest, SubstrAndToNumber) {
  EXPECT_THAT(values_of(substr(Tensor::from_strings({"hello", "hi"}), 1, 3)), ElementsAre("ell", "i"));
  const Tensor numbers = Tensor::from_strings({" 1.5", "-2", "1e3"});
  EXPECT_THAT(to_number(numbers).to_vector<float>(), ElementsAre(1.5f, -2.0f, 1000.0f));
  EXPECT_THAT(to_number(Tensor::from_strings({"7", "-8"}), kInt64).to_vector<int64_t>(), ElementsAre(7, -8));
  EXPECT_THAT([] { (void)to_number(Tensor::from_strings({"12x"}), kInt32); },
              ThrowsMessage<ValueError>(HasSubstr("cannot parse \"12x\" as int32")));
  EXPECT_THAT([] { (void)to_number(Tensor::from_strings({"1"}), kBool); },
              ThrowsMessage<DTypeError>(HasSubstr("strings.to_number: expected out_type float32, int32 or int64, got bool")));
}

TEST(StringOpsTest, ANumericTensorIsADTypeErrorNamingTheOp) {
  const Tensor numbers = zeros({3});
  EXPECT_THAT([&] { (void)length(numbers); },
              ThrowsMessage<DTypeError>(HasSubstr("strings.length: expected a string tensor, got dtype float32")));
  EXPECT_THAT([&] { (void)lower(numbers); }, ThrowsMessage<DTypeError>(HasSubstr("strings.lower:")));
  EXPECT_THAT([&] { (void)split(numbers); }, ThrowsMessage<DTypeError>(HasSubstr("strings.split:")));
}

}  // namespace
}  // namespace chorus::text
