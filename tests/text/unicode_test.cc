// Tests for chorus/text/unicode.h and regex.h: ICU normalisation and case mapping on
// hand-picked code points, the invalid-UTF-8 policy, category predicates, RE2 wrappers.
#include "chorus/text/unicode.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "chorus/text/regex.h"
#include "tests/testing/test_names.h"

namespace chorus::text {
namespace {

using namespace testing::test_names;

TEST(UnicodeTest, NormalizesToEachForm) {
  const std::string composed = "caf\u00e9";      // é as one code point
  const std::string decomposed = "cafe\u0301";   // e + COMBINING ACUTE ACCENT
  EXPECT_EQ(normalize(decomposed, NormalizationForm::kNFC), composed);
  EXPECT_EQ(normalize(composed, NormalizationForm::kNFD), decomposed);
  // The "fi" ligature U+FB01 is a compatibility character: only the K forms expand it.
  EXPECT_EQ(normalize("\ufb01", NormalizationForm::kNFC), "\ufb01");
  EXPECT_EQ(normalize("\ufb01", NormalizationForm::kNFKC), "fi");
  EXPECT_EQ(normalize("\ufb01\u00e9", NormalizationForm::kNFKD), "fie\u0301");
}

TEST(UnicodeTest, CaseFoldsWithCompatibilityMapping) {
  EXPECT_EQ(case_fold("Hello WORLD"), "hello world");
  EXPECT_EQ(case_fold("Stra\u00dfe"), "strasse");            // ß folds to ss
  EXPECT_EQ(case_fold("\uff21\uff22\uff23"), "abc");          // fullwidth ABC: NFKC then fold
  EXPECT_EQ(case_fold("\u00c9COLE"), "\u00e9cole");           // accents stay
}

TEST(UnicodeTest, LowerAndUpperAreFullUnicode) {
  EXPECT_EQ(to_lower("\u00c9T\u00c9"), "\u00e9t\u00e9");
  EXPECT_EQ(to_upper("stra\u00dfe"), "STRASSE");
  EXPECT_EQ(to_lower("ABC def"), "abc def");
}

TEST(UnicodeTest, StripsAccents) {
  EXPECT_EQ(strip_accents("Caf\u00e9 na\u00efve"), "Cafe naive");
  EXPECT_EQ(strip_accents("plain"), "plain");
  EXPECT_EQ(strip_accents("\u4e2d"), "\u4e2d");  // an ideograph has no marks
}

TEST(UnicodeTest, CountsCodePoints) {
  EXPECT_EQ(utf8_length(""), 0);
  EXPECT_EQ(utf8_length("abc"), 3);
  EXPECT_EQ(utf8_length("\u00e9\u4e2d\U0001F600"), 3);  // 2 + 3 + 4 bytes
}

TEST(UnicodeTest, InvalidUtf8IsAnErrorNamingTheOffset) {
  EXPECT_TRUE(is_valid_utf8("ok \u00e9"));
  EXPECT_FALSE(is_valid_utf8("ab\xff"));
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_THAT([] { validate_utf8("abc\xff"); },
              ThrowsMessage<ValueError>(HasSubstr("invalid UTF-8 at byte 3 of 4: 0xff")));
  EXPECT_THAT([] { (void)utf8_length("\xe4\xb8"); },  // truncated 3-byte sequence
              ThrowsMessage<ValueError>(HasSubstr("invalid UTF-8 at byte 0 of 2: 0xe4")));
  EXPECT_THAT([] { (void)normalize("a\x80", NormalizationForm::kNFC); },
              ThrowsMessage<ValueError>(HasSubstr("at byte 1 of 2")));
}

TEST(UnicodeTest, ReplacementIsExplicit) {
  EXPECT_EQ(replace_invalid_utf8("a\xff" "b"), "a\ufffd" "b");
  EXPECT_EQ(replace_invalid_utf8("ok"), "ok");
}

TEST(UnicodeTest, DecodesAndEncodes) {
  const std::string text = "a\u00e9\U0001F600";
  EXPECT_EQ(to_utf32(text), (std::u32string{U'a', 0xE9, 0x1F600}));
  EXPECT_EQ(to_utf8(to_utf32(text)), text);
  size_t pos = 1;
  EXPECT_EQ(decode_utf8(text, pos), char32_t{0xE9});
  EXPECT_EQ(pos, 3u);
  std::string out;
  EXPECT_THROW(append_utf8(out, 0xD800), ValueError);
}

TEST(UnicodeTest, CategoryPredicates) {
  EXPECT_TRUE(is_punctuation(U'!'));
  EXPECT_TRUE(is_punctuation(0x3002));   // IDEOGRAPHIC FULL STOP, Po
  EXPECT_TRUE(is_punctuation(0x00BF));   // ¿
  EXPECT_FALSE(is_punctuation(U'$'));    // Sc, not P
  EXPECT_FALSE(is_punctuation(U'a'));
  EXPECT_TRUE(is_control_or_format(U'\n'));    // Cc
  EXPECT_TRUE(is_control_or_format(0x200B));   // ZERO WIDTH SPACE, Cf
  EXPECT_FALSE(is_control_or_format(U' '));
  EXPECT_TRUE(is_whitespace(U' '));
  EXPECT_TRUE(is_whitespace(0x00A0));
  EXPECT_TRUE(is_whitespace(0x3000));
  EXPECT_FALSE(is_whitespace(U'x'));
  EXPECT_TRUE(is_nonspacing_mark(0x0301));
  EXPECT_FALSE(is_nonspacing_mark(U'e'));
  EXPECT_TRUE(is_cjk_ideograph(0x4E2D));
  EXPECT_TRUE(is_cjk_ideograph(0x20000));
  EXPECT_FALSE(is_cjk_ideograph(0x3042));  // Hiragana A is not an ideograph
  EXPECT_TRUE(is_letter(0x00E9));
  EXPECT_TRUE(is_number(U'7'));
}

TEST(RegexTest, FullMatchAndReplace) {
  EXPECT_TRUE(regex_full_match("abc123", "[a-z]+\\d+"));
  EXPECT_FALSE(regex_full_match("abc123!", "[a-z]+\\d+"));
  EXPECT_TRUE(regex_full_match("\u00e9t\u00e9", "\\p{L}+"));
  EXPECT_EQ(regex_replace("a1b22c", "\\d+", "#"), "a#b#c");
  EXPECT_EQ(regex_replace("a1b22c", "\\d+", "#", /*replace_global=*/false), "a#b22c");
  EXPECT_EQ(regex_replace("\u4e2d\u56fd", "[\\x{4E00}-\\x{9FFF}]", " \\0 "), " \u4e2d  \u56fd ");
  const Regex digits("(\\d)(\\d)");
  EXPECT_EQ(digits.replace("12 34", "\\2\\1"), "21 43");
  EXPECT_TRUE(digits.partial_match("x12"));
}

TEST(RegexTest, BadPatternsAndRewritesAreErrors) {
  EXPECT_THAT([] { (void)Regex("a("); }, ThrowsMessage<ValueError>(HasSubstr("regex: invalid pattern \"a(\"")));
  EXPECT_THAT([] { (void)regex_replace("ab", "(a)", "\\2"); },
              ThrowsMessage<ValueError>(HasSubstr("rewrite \"\\2\" does not fit pattern \"(a)\"")));
}

}  // namespace
}  // namespace chorus::text
