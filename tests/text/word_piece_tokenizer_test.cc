// Tests for chorus/text/word_piece_tokenizer.h on small hand-made vocabularies: each
// pre-tokenisation rule, greedy longest-match WordPiece, OOV rules, outputs and errors.
// Expected ids are positions in the vocabularies written out below.
#include "chorus/text/word_piece_tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"

namespace chorus::text {
namespace {

using namespace testing::test_names;

// ids:                                0        1        2      3        4        5      6     7        8
const std::vector<std::string> kVocab{"[PAD]", "[UNK]", "the", "quick", "brown", "fox", "un", "##aff", "##able",
                                      //  9     10   11   12   13   14     15      16    17      18
                                      "##s", "!", ",", "@", "<", ">", "unk", "cafe", "caf\u00e9", "\u4e2d",
                                      //  19           20         21          22     23     24
                                      "\u56fd", "##\u56fd", "\u3002", "$", "a", "##a"};

WordPieceTokenizer make(WordPieceTokenizerOptions options = {}) { return WordPieceTokenizer(kVocab, options); }

TEST(WordPieceTokenizerTest, SplitsOnWhitespaceAndLooksUpWords) {
  EXPECT_THAT(make().tokenize("the quick  brown\tfox\n"), ElementsAre(2, 3, 4, 5));
}

TEST(WordPieceTokenizerTest, GreedyLongestMatchWithContinuations) {
  EXPECT_THAT(make().tokenize("unaffable foxs"), ElementsAre(6, 7, 8, 5, 9));
  EXPECT_THAT(make().tokenize_to_pieces("unaffable"), ElementsAre("un", "##aff", "##able"));
}

TEST(WordPieceTokenizerTest, WordWithAnUnmatchedPartIsOneOov) {
  // "un" + "##aff" match, then "xable" has no continuation piece: the whole word is [UNK].
  EXPECT_THAT(make().tokenize("the unaffxable fox"), ElementsAre(2, 1, 5));
  EXPECT_THAT(make().tokenize("zebra"), ElementsAre(1));
}

TEST(WordPieceTokenizerTest, PunctuationIsKeptAsTokens) {
  // ASCII symbols count as punctuation even outside \p{P} ('$' is Sc).
  EXPECT_THAT(make().tokenize("fox!,fox$"), ElementsAre(5, 10, 11, 5, 22));
  // Unicode \p{P}: IDEOGRAPHIC FULL STOP.
  EXPECT_THAT(make().tokenize("fox\u3002fox"), ElementsAre(5, 21, 5));
}

TEST(WordPieceTokenizerTest, WikiTextMarkers) {
  // WikiText writes unknown words as <unk> and number separators as @,@.
  EXPECT_THAT(make().tokenize("<unk> the @,@ fox"), ElementsAre(13, 15, 14, 2, 12, 11, 12, 5));
}

TEST(WordPieceTokenizerTest, ControlAndFormatCharactersSeparateAndVanish) {
  // U+200B ZERO WIDTH SPACE is Cf; U+0085 is Cc.
  EXPECT_THAT(make().tokenize("fox\u200bfox\u0085fox\rfox"), ElementsAre(5, 5, 5, 5));
}

TEST(WordPieceTokenizerTest, NonAsciiSpaceDoesNotSeparateAsInKerasNlp) {
  // RE2's \s is ASCII-only, so "fox<NBSP>fox" is one word; case folding makes it "fox fox",
  // which is not a piece.
  EXPECT_THAT(make().tokenize("fox\u00a0fox"), ElementsAre(1));
}

TEST(WordPieceTokenizerTest, LowercaseFoldsCase) {
  EXPECT_THAT(make().tokenize("The QUICK Fox"), ElementsAre(2, 3, 5));
  EXPECT_THAT(make({.lowercase = false}).tokenize("The quick Fox"), ElementsAre(1, 3, 1));
  // Fullwidth letters fold through NFKC.
  EXPECT_THAT(make().tokenize("\uff26\uff2f\uff38"), ElementsAre(5));
}

TEST(WordPieceTokenizerTest, AccentsKeptUnlessStripped) {
  EXPECT_THAT(make().tokenize("Caf\u00e9"), ElementsAre(17));
  EXPECT_THAT(make({.strip_accents = true}).tokenize("Caf\u00e9"), ElementsAre(16));
  // A decomposed é (e + U+0301) is stripped the same way.
  EXPECT_THAT(make({.strip_accents = true}).tokenize("Cafe\u0301"), ElementsAre(16));
}

TEST(WordPieceTokenizerTest, CjkIdeographsAreIsolated) {
  EXPECT_THAT(make().tokenize("\u4e2d\u56fd"), ElementsAre(18, 19));
  EXPECT_THAT(make().tokenize("fox\u4e2dfox"), ElementsAre(5, 18, 5));
  // Without the split they form one word: "中" then the continuation "##国".
  EXPECT_THAT(make({.split_on_cjk = false}).tokenize("\u4e2d\u56fd"), ElementsAre(18, 20));
}

TEST(WordPieceTokenizerTest, WordsOverOneHundredBytesAreOov) {
  const std::string hundred(100, 'a');
  const std::vector<int32_t> ids = make().tokenize(hundred);
  ASSERT_EQ(ids.size(), 100u);  // "a" then 99 x "##a"
  EXPECT_EQ(ids.front(), 23);
  EXPECT_EQ(ids.back(), 24);
  EXPECT_THAT(make().tokenize(hundred + "a"), ElementsAre(1));
  EXPECT_THAT(make().tokenize("fox " + hundred + "a fox"), ElementsAre(5, 1, 5));
}

TEST(WordPieceTokenizerTest, NoSplitTreatsInputAsOneWord) {
  EXPECT_THAT(make({.split = false}).tokenize("the fox"), ElementsAre(1));
  EXPECT_THAT(make({.split = false}).tokenize("Unaffable"), ElementsAre(6, 7, 8));
}

TEST(WordPieceTokenizerTest, SequenceLengthTruncatesAndPads) {
  const WordPieceTokenizer tokenizer = make({.sequence_length = 3});
  EXPECT_THAT(tokenizer.tokenize("the fox"), ElementsAre(2, 5, 0));
  EXPECT_THAT(tokenizer.tokenize("the quick brown fox"), ElementsAre(2, 3, 4));
  const Tensor dense = tokenizer.tokenize_dense({"fox", "the quick brown fox"});
  EXPECT_EQ(dense.shape(), (Shape{2, 3}));
  EXPECT_THAT(dense.to_vector<int32_t>(), ElementsAre(5, 0, 0, 2, 3, 4));
}

TEST(WordPieceTokenizerTest, BatchesAreRaggedOrPaddedToTheLongest) {
  const WordPieceTokenizer tokenizer = make();
  const auto rows = tokenizer.tokenize(std::vector<std::string>{"fox", "unaffable", ""});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_THAT(rows[0], ElementsAre(5));
  EXPECT_THAT(rows[1], ElementsAre(6, 7, 8));
  EXPECT_TRUE(rows[2].empty());
  const Tensor dense = tokenizer.tokenize_dense({"fox", "unaffable", ""});
  EXPECT_EQ(dense.shape(), (Shape{3, 3}));
  EXPECT_THAT(dense.to_vector<int32_t>(), ElementsAre(5, 0, 0, 6, 7, 8, 0, 0, 0));
}

TEST(WordPieceTokenizerTest, DetokenizeGluesContinuations) {
  const WordPieceTokenizer tokenizer = make();
  EXPECT_EQ(tokenizer.detokenize({2, 6, 7, 8, 5, 9}), "the unaffable foxs");
  EXPECT_EQ(tokenizer.detokenize(std::vector<int32_t>{}), "");  // {} alone would also fit the tensor overloads
  EXPECT_THAT([&] { (void)tokenizer.detokenize({99}); },
              ThrowsMessage<IndexError>(HasSubstr("id 99 out of range [0, 25)")));
}

TEST(WordPieceTokenizerTest, VocabularyAccessors) {
  const WordPieceTokenizer tokenizer = make();
  EXPECT_EQ(tokenizer.vocabulary_size(), 25);
  EXPECT_EQ(tokenizer.token_to_id("fox"), 5);
  EXPECT_EQ(tokenizer.id_to_token(8), "##able");
  EXPECT_EQ(tokenizer.oov_id(), 1);
  EXPECT_THAT([&] { (void)tokenizer.token_to_id("zebra"); },
              ThrowsMessage<ValueError>(HasSubstr("token \"zebra\" is not in the vocabulary (25 tokens)")));
}

TEST(WordPieceTokenizerTest, CustomSuffixAndOovToken) {
  const WordPieceTokenizer tokenizer(std::vector<std::string>{"<oov>", "run", "@@ning"},
                                     {.suffix_indicator = "@@", .oov_token = "<oov>"});
  EXPECT_THAT(tokenizer.tokenize("running walking"), ElementsAre(1, 2, 0));
}

TEST(WordPieceTokenizerTest, InvalidUtf8NamesTheBatchElementAndOffset) {
  const WordPieceTokenizer tokenizer = make();
  EXPECT_THAT([&] { (void)tokenizer.tokenize("fox \xff"); },
              ThrowsMessage<ValueError>(HasSubstr("invalid UTF-8 at byte 4 of 5")));
  EXPECT_THAT([&] { (void)tokenizer.tokenize(std::vector<std::string>{"fox", "a\xc3"}); },
              ThrowsMessage<ValueError>(HasSubstr("WordPieceTokenizer: batch element 1: invalid UTF-8 at byte 1")));
}

TEST(WordPieceTokenizerTest, MissingOovTokenIsAnError) {
  EXPECT_THAT([] { (void)WordPieceTokenizer(std::vector<std::string>{"a", "b"}); },
              ThrowsMessage<ValueError>(HasSubstr("oov_token \"[UNK]\" is not in the vocabulary")));
  EXPECT_THAT([] { (void)WordPieceTokenizer(kVocab, {.sequence_length = -1}); },
              ThrowsMessage<ValueError>(HasSubstr("expected sequence_length >= 0. Received: sequence_length=-1")));
}

class WordPieceVocabularyFileTest : public chorus::testing::TempDirTest {};

TEST_F(WordPieceVocabularyFileTest, LoadsOneTokenPerLine) {
  const std::string path = write("vocab.txt", "[UNK]\r\nthe\nfox  \n##es\n");
  const WordPieceTokenizer tokenizer = WordPieceTokenizer::from_file(path);
  EXPECT_EQ(tokenizer.vocabulary_size(), 4);
  EXPECT_THAT(tokenizer.tokenize("The foxes"), ElementsAre(1, 2, 3));
}

TEST_F(WordPieceVocabularyFileTest, BadFilesAreErrors) {
  const std::string empty = write("empty.txt", "");
  EXPECT_THAT([&] { (void)WordPieceTokenizer::from_file(empty); },
              ThrowsMessage<ValueError>(HasSubstr(empty + ": expected at least one token, got an empty vocabulary")));
  const std::string duplicate = write("dup.txt", "[UNK]\nfox\nthe\nfox\n");
  EXPECT_THAT([&] { (void)WordPieceTokenizer::from_file(duplicate); },
              ThrowsMessage<ValueError>(HasSubstr(duplicate + ":4: duplicate token \"fox\", first seen on line 2")));
  const std::string no_unk = write("no_unk.txt", "the\nfox\n");
  EXPECT_THAT([&] { (void)WordPieceTokenizer::from_file(no_unk); },
              ThrowsMessage<ValueError>(HasSubstr("oov_token \"[UNK]\" is not in the vocabulary " + no_unk)));
  const std::string bad_utf8 = write("bad.txt", "[UNK]\nf\xffx\n");
  EXPECT_THAT([&] { (void)WordPieceTokenizer::from_file(bad_utf8); },
              ThrowsMessage<ValueError>(HasSubstr(bad_utf8 + ":2: token is not valid UTF-8")));
  const std::string missing = dir() + "/missing.txt";
  EXPECT_THAT([&] { (void)WordPieceTokenizer::from_file(missing); },
              ThrowsMessage<IOError>(HasSubstr(missing + ": cannot open vocabulary file")));
}

TEST(VocabularyTest, EmptyAndDuplicateListsAreErrors) {
  EXPECT_THAT([] { (void)Vocabulary({}); }, ThrowsMessage<ValueError>(HasSubstr("got an empty vocabulary")));
  EXPECT_THAT([] { (void)Vocabulary({"a", "b", "a"}); },
              ThrowsMessage<ValueError>(HasSubstr("<list>:3: duplicate token \"a\", first seen on line 1")));
}

}  // namespace
}  // namespace chorus::text
