// Tests for chorus/text/word_tokenizer.h: the PyTorch peer's word vocabulary rule
// (reserved, then words by count, ties in code point order) and whitespace tokenisation.
#include "chorus/text/word_tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "tests/testing/test_names.h"

namespace chorus::text {
namespace {

using namespace testing::test_names;

TEST(WordTokenizerTest, VocabularyIsReservedThenWordsByCountThenCodePoint) {
  // counts: the 3, cat 2, sat 2, Zoo 1, a 1, é 1. Ties by code point: "Z" < "a" < "é".
  const std::vector<std::string> lines{"the cat sat", "the cat  sat the", "a Zoo \u00e9"};
  EXPECT_THAT(build_word_vocabulary(lines),
              ElementsAre("[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]", "the", "cat", "sat", "Zoo", "a", "\u00e9"));
  EXPECT_THAT(build_word_vocabulary(lines, {.max_size = 7}),
              ElementsAre("[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]", "the", "cat"));
}

TEST(WordTokenizerTest, TokenizesWordsAndMapsUnknownsToOov) {
  const WordTokenizer tokenizer(Vocabulary(build_word_vocabulary({"the cat sat", "the cat", "the"})));
  // counts the 3, cat 2, sat 1: ids [PAD]0 [CLS]1 [SEP]2 [MASK]3 [UNK]4 the5 cat6 sat7. No case folding, no splitting
  // of punctuation: "The" and "cat," are unknown.
  EXPECT_THAT(tokenizer.tokenize("the cat sat"), ElementsAre(5, 6, 7));
  EXPECT_THAT(tokenizer.tokenize("The cat, sat"), ElementsAre(4, 4, 7));
  EXPECT_THAT(tokenizer.tokenize(" the\u3000cat\u00a0sat\t"), ElementsAre(5, 6, 7));  // Unicode spaces split, as str.split()
  EXPECT_EQ(tokenizer.detokenize({5, 6, 4}), "the cat [UNK]");
}

TEST(WordTokenizerTest, WikiTextMarkersAreWords) {
  const WordTokenizer tokenizer(Vocabulary(build_word_vocabulary({"1 @,@ 000 <unk>"})));
  // by count (all 1) in code point order: "000" < "1" < "<unk>" < "@,@"
  EXPECT_THAT(tokenizer.tokenize("<unk> @,@"), ElementsAre(7, 8));
}

TEST(WordTokenizerTest, Errors) {
  EXPECT_THAT([] { (void)WordTokenizer(Vocabulary({"a", "b"})); },
              ThrowsMessage<ValueError>(HasSubstr("WordTokenizer: oov_token \"[UNK]\" is not in the vocabulary")));
  const WordTokenizer tokenizer(Vocabulary({"[UNK]", "a"}));
  EXPECT_THAT([&] { (void)tokenizer.tokenize("a \xff"); }, ThrowsMessage<ValueError>(HasSubstr("at byte 2 of 3")));
  EXPECT_THAT([&] { (void)tokenizer.detokenize({2}); }, ThrowsMessage<IndexError>(HasSubstr("id 2 out of range [0, 2)")));
}

}  // namespace
}  // namespace chorus::text
