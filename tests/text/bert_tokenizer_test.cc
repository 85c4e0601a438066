// Tests for chorus/text/bert_tokenizer.h: special tokens, and BERT's rules against the
// real bert_tiny_en_uncased vocabulary (shared/data/bert/vocab.txt). Expected pieces are
// worked out from the rules; their ids are looked up in the vocabulary.
#include "chorus/text/bert_tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/test_names.h"

namespace chorus::text {
namespace {

using namespace testing::test_names;

class BertTokenizerRealVocabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto dir = chorus::testing::shared_data_dir("bert");
    if (!dir) GTEST_SKIP() << chorus::testing::shared_data_missing("bert");
    path_ = *dir + "/vocab.txt";
  }
  // The ids of `pieces` in `tokenizer`'s vocabulary.
  static std::vector<int32_t> ids(const BertTokenizer& tokenizer, const std::vector<std::string>& pieces) {
    std::vector<int32_t> out;
    for (const auto& piece : pieces) out.push_back(tokenizer.token_to_id(piece));
    return out;
  }
  std::string path_;
};

TEST_F(BertTokenizerRealVocabTest, SpecialTokensHaveBertsIds) {
  const BertTokenizer tokenizer = BertTokenizer::from_file(path_);
  EXPECT_EQ(tokenizer.vocabulary_size(), 30522);
  // vocab.txt lines 1, 101, 102, 103, 104 (ids are line - 1).
  EXPECT_EQ(tokenizer.pad_token_id(), 0);
  EXPECT_EQ(tokenizer.unk_token_id(), 100);
  EXPECT_EQ(tokenizer.cls_token_id(), 101);
  EXPECT_EQ(tokenizer.sep_token_id(), 102);
  EXPECT_EQ(tokenizer.mask_token_id(), 103);
}

TEST_F(BertTokenizerRealVocabTest, LowercasesAndSplitsPunctuation) {
  const BertTokenizer tokenizer = BertTokenizer::from_file(path_);
  EXPECT_THAT(tokenizer.tokenize("Hello, World!"), ElementsAreArray(ids(tokenizer, {"hello", ",", "world", "!"})));
}

TEST_F(BertTokenizerRealVocabTest, WikiTextMarkers) {
  const BertTokenizer tokenizer = BertTokenizer::from_file(path_);
  // "unk" is not a token: greedy longest match gives "un" + "##k".
  EXPECT_THAT(tokenizer.tokenize("<unk> 1 @,@ 000"),
              ElementsAreArray(ids(tokenizer, {"<", "un", "##k", ">", "1", "@", ",", "@", "000"})));
}

TEST_F(BertTokenizerRealVocabTest, AccentsNeedStripping) {
  // The uncased vocabulary holds no piece with "é" or "ï", so without stripping each word
  // has an unmatched part and becomes [UNK].
  const BertTokenizer keep = BertTokenizer::from_file(path_);
  EXPECT_THAT(keep.tokenize("Caf\u00e9 na\u00efve"), ElementsAreArray(ids(keep, {"[UNK]", "[UNK]"})));
  const BertTokenizer strip = BertTokenizer::from_file(path_, {.strip_accents = true});
  EXPECT_THAT(strip.tokenize("Caf\u00e9 na\u00efve"), ElementsAreArray(ids(strip, {"cafe", "naive"})));
}

TEST_F(BertTokenizerRealVocabTest, CjkAndContinuations) {
  const BertTokenizer tokenizer = BertTokenizer::from_file(path_);
  EXPECT_THAT(tokenizer.tokenize("\u4e2d\u56fd"), ElementsAreArray(ids(tokenizer, {"\u4e2d", "\u56fd"})));
  // "xqzt": no "xq" piece, so "x" then continuations "##q", "##z", "##t".
  EXPECT_THAT(tokenizer.tokenize("xqzt"), ElementsAreArray(ids(tokenizer, {"x", "##q", "##z", "##t"})));
  EXPECT_EQ(tokenizer.detokenize(tokenizer.tokenize("xqzt hello")), "xqzt hello");
}

TEST_F(BertTokenizerRealVocabTest, LongWordIsUnknown) {
  const BertTokenizer tokenizer = BertTokenizer::from_file(path_);
  EXPECT_THAT(tokenizer.tokenize("the " + std::string(101, 'x') + " the"),
              ElementsAreArray(ids(tokenizer, {"the", "[UNK]", "the"})));
}

TEST(BertTokenizerTest, MissingSpecialTokensAreNamed) {
  EXPECT_THAT([] { (void)BertTokenizer(Vocabulary({"[PAD]", "[UNK]", "[SEP]", "hello"})); },
              ThrowsMessage<ValueError>(HasSubstr("BertTokenizer: vocabulary <list> lacks special token(s) [CLS], "
                                                  "[MASK]; expected all of [PAD], [UNK], [CLS], [SEP], [MASK]")));
}

TEST(BertTokenizerTest, HandMadeVocabulary) {
  const BertTokenizer tokenizer(Vocabulary({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi", "##s", "."}));
  EXPECT_EQ(tokenizer.cls_token_id(), 2);
  EXPECT_EQ(tokenizer.mask_token_id(), 4);
  EXPECT_THAT(tokenizer.tokenize("His hi."), ElementsAreArray({5, 6, 5, 7}));
  EXPECT_THAT(tokenizer.tokenize_to_pieces("HIS"), ElementsAreArray({"hi", "##s"}));
}

}  // namespace
}  // namespace chorus::text
