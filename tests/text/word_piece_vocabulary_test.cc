// Tests for chorus/text/word_piece_vocabulary.h: TF Text's learner traced by hand on a
// one-word corpus, and its properties on a synthetic corpus.
#include "chorus/text/word_piece_vocabulary.h"

#include <random>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "chorus/text/unicode.h"
#include "chorus/text/word_piece_tokenizer.h"
#include "chorus/text/word_tokenizer.h"

namespace chorus::text {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// "ab" x 20. Thresholds are searched in [max(min count, 10), min(max count, 1e7)] = [10, 20];
// the first, 15, keeps "ab" (20) and "##b" (20) in pass 0; from pass 1 on, "ab" splits as
// one piece, so only "ab" is counted, and "a" loses its 20 to "ab". Every char and ##char
// is added with count 1. Final order: reserved, chars, then by count and code point.
TEST(WordPieceVocabularyTest, TracesTheLearnerByHand) {
  const std::vector<std::string> lines(20, "ab");
  EXPECT_THAT(compute_word_piece_vocabulary(lines, {.vocabulary_size = 10}),
              ElementsAre("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]", "a", "b", "ab", "##a", "##b"));
  // A target of 8 drives the threshold up to 20, where the size is still 10: cut to 8.
  EXPECT_THAT(compute_word_piece_vocabulary(lines, {.vocabulary_size = 8}),
              ElementsAre("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]", "a", "b", "ab"));
}

TEST(WordPieceVocabularyTest, ReservedTokensComeFirstInTheirOrder) {
  const std::vector<std::string> lines(20, "ab");
  EXPECT_THAT(compute_word_piece_vocabulary(lines, {.vocabulary_size = 7, .reserved_tokens = {"<s>", "<unk>"}}),
              ElementsAre("<s>", "<unk>", "a", "b", "ab", "##a", "##b"));
}

// A corpus of made-up words over ten syllables, Zipf-distributed.
std::vector<std::string> synthetic_corpus(int lines, uint32_t seed) {
  const std::vector<std::string> syllables{"ka", "to", "mi", "re", "su", "no", "ha", "li", "po", "de", "\u00e9"};
  std::mt19937 rng(seed);
  std::vector<std::string> words;
  for (int w = 0; w < 3000; ++w) {
    std::string word;
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int s = 0; s < n; ++s) word += syllables[rng() % syllables.size()];
    words.push_back(word);
  }
  std::vector<double> weights;
  for (size_t r = 0; r < words.size(); ++r) weights.push_back(1.0 / static_cast<double>(r + 1));
  std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
  std::vector<std::string> out;
  for (int l = 0; l < lines; ++l) {
    std::string line;
    for (int k = 0; k < 12; ++k) line += (k ? " " : "") + words[pick(rng)];
    out.push_back(line);
  }
  return out;
}

TEST(WordPieceVocabularyTest, LearnsAVocabularyNearTheTargetSize) {
  const std::vector<std::string> corpus = synthetic_corpus(4000, 7);
  const int64_t target = 300;
  const std::vector<std::string> vocab = compute_word_piece_vocabulary(corpus, {.vocabulary_size = target});
  EXPECT_LE(static_cast<int64_t>(vocab.size()), target);
  EXPECT_GE(static_cast<double>(vocab.size()), 0.95 * static_cast<double>(target));
  EXPECT_THAT(std::vector<std::string>(vocab.begin(), vocab.begin() + 5),
              ElementsAre("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"));
  // Every character of the corpus, and its continuation form, is a token.
  const std::set<std::string> tokens(vocab.begin(), vocab.end());
  EXPECT_EQ(tokens.size(), vocab.size());  // no duplicates
  for (const std::string& line : corpus) {
    for (const char32_t c : to_utf32(line)) {
      if (c == U' ') continue;
      const std::string ch = to_utf8(std::u32string(1, c));
      EXPECT_TRUE(tokens.contains(ch)) << ch;
      EXPECT_TRUE(tokens.contains("##" + ch)) << ch;
    }
  }
}

TEST(WordPieceVocabularyTest, FewerUnknownsThanAWordVocabularyOfTheSameSize) {
  const std::vector<std::string> corpus = synthetic_corpus(4000, 11);
  const std::vector<std::string> held_out = synthetic_corpus(500, 12);
  const std::vector<std::string> pieces = compute_word_piece_vocabulary(corpus, {.vocabulary_size = 300});
  const WordPieceTokenizer word_piece(pieces, {.lowercase = false});
  const WordTokenizer words(Vocabulary(build_word_vocabulary(
      corpus, {.max_size = static_cast<int64_t>(pieces.size())})));
  int64_t piece_unknowns = 0;
  int64_t word_unknowns = 0;
  for (const std::string& line : held_out) {
    for (const int32_t id : word_piece.tokenize(line)) piece_unknowns += id == word_piece.oov_id();
    for (const int32_t id : words.tokenize(line)) word_unknowns += id == words.oov_id();
  }
  EXPECT_GT(word_unknowns, 0);
  EXPECT_LT(piece_unknowns, word_unknowns);
  EXPECT_EQ(piece_unknowns, 0);  // every character is a piece, so every word splits
}

TEST(WordPieceVocabularyTest, LowercasesWhenAsked) {
  const std::vector<std::string> lines(20, "AB");
  EXPECT_THAT(compute_word_piece_vocabulary(lines, {.vocabulary_size = 10, .lowercase = true}),
              ElementsAre("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]", "a", "b", "ab", "##a", "##b"));
}

TEST(WordPieceVocabularyTest, BadArgumentsAreErrors) {
  EXPECT_THAT([] { (void)compute_word_piece_vocabulary(std::vector<std::string>{"a"}, {.vocabulary_size = 0}); },
              ThrowsMessage<ValueError>(HasSubstr("expected vocabulary_size > 0. Received: vocabulary_size=0")));
  EXPECT_THAT([] { (void)compute_word_piece_vocabulary(std::vector<std::string>{" ", ""}, {.vocabulary_size = 5}); },
              ThrowsMessage<ValueError>(HasSubstr("compute_word_piece_vocabulary: the input holds no words")));
  EXPECT_THAT(
      [] { (void)compute_word_piece_vocabulary(std::vector<std::string>{"ok", "b\xff"}, {.vocabulary_size = 5}); },
      ThrowsMessage<ValueError>(HasSubstr("compute_word_piece_vocabulary: line 2: invalid UTF-8 at byte 1")));
}

}  // namespace
}  // namespace chorus::text
