// Tests for the tokenizers' string-tensor API (chorus/text/tokenizer_tensors.h through
// WordPieceTokenizer, BertTokenizer and WordTokenizer): shapes and ids on hand-made
// strings, errors, agreement with the std::string API on real WikiText-2 lines, and use
// inside dataset.map on several threads.
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/creation.h"
#include "chorus/core/error.h"
#include "chorus/data/dataset.h"
#include "chorus/text/bert_tokenizer.h"
#include "chorus/text/word_piece_tokenizer.h"
#include "chorus/text/word_tokenizer.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/test_names.h"

namespace chorus::text {
namespace {

using namespace testing::test_names;

// ids:                                      0        1        2      3        4        5      6     7        8
const std::vector<std::string> kTensorVocab{"[PAD]", "[UNK]", "the", "quick", "brown", "fox", "un", "##aff", "##able",
                                            //  9
                                            "##s"};

WordPieceTokenizer small_word_piece(int64_t sequence_length = 0) {
  return WordPieceTokenizer(kTensorVocab, {.sequence_length = sequence_length});
}

std::vector<int32_t> ids_of(const Tensor& t) { return t.to_vector<int32_t>(); }
std::vector<std::string> strings_of(const Tensor& t) { return {t.strings().begin(), t.strings().end()}; }

TEST(TokenizerTensorsTest, ScalarStringGivesOneDimensionalIds) {
  const Tensor ids = small_word_piece().tokenize(Tensor::from_string("unaffable foxs")).tensor();
  EXPECT_EQ(ids.dtype(), kInt32);
  EXPECT_EQ(ids.shape(), (Shape{5}));
  EXPECT_THAT(ids_of(ids), ElementsAre(6, 7, 8, 5, 9));
  EXPECT_EQ(small_word_piece().tokenize(Tensor::from_string("")).tensor().shape(), (Shape{0}));
}

TEST(TokenizerTensorsTest, BatchGivesRaggedInt32Rows) {
  const Tree out = small_word_piece().tokenize(Tensor::from_strings({"the quick", "", "unaffable foxs", "zebra"}));
  ASSERT_TRUE(RaggedTensor::is_ragged(out));
  const RaggedTensor ids = RaggedTensor::from_tree(out);
  EXPECT_EQ(ids.dtype(), kInt32);
  EXPECT_EQ(ids.nrows(), 4);
  EXPECT_THAT(ids.row_splits().to_vector<int64_t>(), ElementsAre(0, 2, 2, 7, 8));
  EXPECT_THAT(ids_of(ids.values()), ElementsAre(2, 3, 6, 7, 8, 5, 9, 1));
  // An empty batch is a ragged tensor of no rows.
  const RaggedTensor none = RaggedTensor::from_tree(small_word_piece().tokenize(Tensor::from_strings({})));
  EXPECT_EQ(none.nrows(), 0);
}

TEST(TokenizerTensorsTest, SequenceLengthPadsWithZeroAndTruncates) {
  const WordPieceTokenizer tokenizer = small_word_piece(4);
  const Tensor batch = tokenizer.tokenize(Tensor::from_strings({"the quick", "", "unaffable foxs"})).tensor();
  EXPECT_EQ(batch.shape(), (Shape{3, 4}));
  EXPECT_THAT(ids_of(batch), ElementsAre(2, 3, 0, 0, 0, 0, 0, 0, 6, 7, 8, 5));
  const Tensor one = tokenizer.tokenize(Tensor::from_string("unaffable foxs")).tensor();
  EXPECT_EQ(one.shape(), (Shape{4}));
  EXPECT_THAT(ids_of(one), ElementsAre(6, 7, 8, 5));
  // The same as the std::string API.
  EXPECT_EQ(ids_of(batch), ids_of(tokenizer.tokenize_dense({"the quick", "", "unaffable foxs"})));
}

TEST(TokenizerTensorsTest, DetokenizeOneSequenceDenseAndRaggedBatches) {
  const WordPieceTokenizer tokenizer = small_word_piece();
  const Tensor one = tokenizer.detokenize(from_values<int32_t>({6, 7, 8, 5, 9}));
  EXPECT_EQ(one.dtype(), kString);
  EXPECT_EQ(one.rank(), 0);
  EXPECT_EQ(one.string_at(0), "unaffable foxs");
  // What tokenize returned goes straight back (ragged Tree form, int64 ids too).
  const Tensor texts = tokenizer.detokenize(tokenizer.tokenize(Tensor::from_strings({"the quick", "", "fox"})));
  EXPECT_EQ(texts.shape(), (Shape{3}));
  EXPECT_THAT(strings_of(texts), ElementsAre("the quick", "", "fox"));
  const RaggedTensor ragged =
      RaggedTensor::from_row_lengths(from_values<int64_t>({2, 5, 4}), from_values<int64_t>({2, 1}));
  EXPECT_THAT(strings_of(tokenizer.detokenize(ragged)), ElementsAre("the fox", "brown"));
  // A dense row is read whole, padding included, as KerasNLP does.
  const Tensor dense = tokenizer.detokenize(from_values<int32_t>({2, 3, 0, 5, 9, 0}, Shape{2, 3}));
  EXPECT_THAT(strings_of(dense), ElementsAre("the quick [PAD]", "foxs [PAD]"));
}

TEST(TokenizerTensorsTest, BertAndWordTokenizersHaveTheSameTensorApi) {
  const BertTokenizer bert(Vocabulary({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "fox"}),
                           {.sequence_length = 3});
  EXPECT_THAT(ids_of(bert.tokenize(Tensor::from_strings({"The fox", "fox"})).tensor()),
              ElementsAre(5, 6, 0, 6, 0, 0));
  EXPECT_EQ(bert.detokenize(from_values<int32_t>({5, 6})).string_at(0), "the fox");

  const WordTokenizer words(Vocabulary({"[UNK]", "the", "cat", "sat"}));
  const RaggedTensor ids = RaggedTensor::from_tree(words.tokenize(Tensor::from_strings({"the cat sat", "dog sat"})));
  EXPECT_THAT(ids.row_splits().to_vector<int64_t>(), ElementsAre(0, 3, 5));
  EXPECT_THAT(ids_of(ids.values()), ElementsAre(1, 2, 3, 0, 3));
  EXPECT_THAT(ids_of(words.tokenize(Tensor::from_string("cat the")).tensor()), ElementsAre(2, 1));
  EXPECT_THAT(strings_of(words.detokenize(ids)), ElementsAre("the cat sat", "[UNK] sat"));
  EXPECT_EQ(words.detokenize(from_values<int32_t>({3, 3})).string_at(0), "sat sat");
}

TEST(TokenizerTensorsTest, Errors) {
  const WordPieceTokenizer tokenizer = small_word_piece();
  EXPECT_THAT([&] { tokenizer.tokenize(from_values<int32_t>({1, 2, 3})); },
              ThrowsMessage<DTypeError>(HasSubstr(
                  "WordPieceTokenizer.tokenize: expected a string tensor, got dtype int32 (shape (3,))")));
  EXPECT_THAT([&] { tokenizer.tokenize(Tensor::from_strings(Shape{2, 1}, {"a", "b"})); },
              ThrowsMessage<ValueError>(HasSubstr("WordPieceTokenizer.tokenize: expected a scalar string or a 1-D "
                                                  "batch of strings, got shape (2, 1)")));
  EXPECT_THAT([&] { tokenizer.tokenize(Tensor::from_strings({"fox", "bad \xff byte"})); },
              ThrowsMessage<ValueError>(HasSubstr("WordPieceTokenizer.tokenize: batch element 1: ")));
  EXPECT_THAT([&] { tokenizer.detokenize(from_values({1.f, 2.f})); },
              ThrowsMessage<DTypeError>(HasSubstr(
                  "WordPieceTokenizer.detokenize: expected int32 or int64 ids, got dtype float32 (shape (2,))")));
  EXPECT_THAT([&] { tokenizer.detokenize(scalar(1.0, kInt32)); },
              ThrowsMessage<ValueError>(HasSubstr("WordPieceTokenizer.detokenize: expected 1-D ids (one sequence) or "
                                                  "2-D ids (a batch), got shape ()")));
  EXPECT_THAT([&] { tokenizer.detokenize(from_values<int32_t>({2, 3, 10, 5}, Shape{2, 2})); },
              ThrowsMessage<IndexError>(HasSubstr("WordPieceTokenizer.detokenize: batch element 1: ")));
  EXPECT_THAT([&] { tokenizer.detokenize(from_values<int64_t>({int64_t{1} << 40})); },
              ThrowsMessage<IndexError>(HasSubstr("id 1099511627776 is outside the int32 range")));
  EXPECT_THAT([&] { tokenizer.detokenize(Tree::list({from_values<int32_t>({1})})); },
              ThrowsMessage<ValueError>(HasSubstr("WordPieceTokenizer.detokenize: expected ids as a tensor or a "
                                                  "RaggedTensor, got")));
  const WordTokenizer words(Vocabulary({"[UNK]", "a"}));
  EXPECT_THAT([&] { words.tokenize(from_values({1.f})); },
              ThrowsMessage<DTypeError>(
                  HasSubstr("WordTokenizer.tokenize: expected a string tensor, got dtype float32")));
}

// The non-empty lines of WikiText-2's test split (the first `limit`).
std::vector<std::string> wikitext_lines(const std::string& dir, size_t limit) {
  std::ifstream in(dir + "/wiki.test.tokens");
  std::vector<std::string> lines;
  for (std::string line; lines.size() < limit && std::getline(in, line);) {
    if (line.find_first_not_of(' ') != std::string::npos) lines.push_back(line);
  }
  return lines;
}

class TokenizerTensorsWikiTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto wikitext = testing::shared_data_dir("wikitext-2");
    if (!wikitext) GTEST_SKIP() << testing::shared_data_missing("wikitext-2");
    const auto bert = testing::shared_data_dir("bert");
    if (!bert) GTEST_SKIP() << testing::shared_data_missing("bert");
    lines_ = wikitext_lines(*wikitext, 600);
    vocab_path_ = *bert + "/vocab.txt";
  }
  std::vector<std::string> lines_;
  std::string vocab_path_;
};

TEST_F(TokenizerTensorsWikiTextTest, TensorApiMatchesTheStringApi) {
  ASSERT_EQ(lines_.size(), 600u);
  const BertTokenizer ragged = BertTokenizer::from_file(vocab_path_);
  const RaggedTensor ids = RaggedTensor::from_tree(ragged.tokenize(Tensor::from_strings(lines_)));
  ASSERT_EQ(ids.nrows(), 600);
  const auto expected = ragged.tokenize(lines_);
  for (int64_t i = 0; i < ids.nrows(); ++i) {
    ASSERT_EQ(ids_of(ids.row(i)), expected[static_cast<size_t>(i)]) << lines_[static_cast<size_t>(i)];
    // One line as a scalar string gives the same row.
    if (i % 50 == 0) {
      EXPECT_EQ(ids_of(ragged.tokenize(Tensor::from_string(lines_[static_cast<size_t>(i)])).tensor()),
                expected[static_cast<size_t>(i)]);
    }
  }
  const Tensor texts = ragged.detokenize(ids);
  for (size_t i = 0; i < lines_.size(); ++i) {
    EXPECT_EQ(texts.string_at(static_cast<int64_t>(i)), ragged.detokenize(expected[i]));
  }

  const BertTokenizer dense = BertTokenizer::from_file(vocab_path_, {.sequence_length = 128});
  const Tensor batch = dense.tokenize(Tensor::from_strings(lines_)).tensor();
  EXPECT_EQ(batch.shape(), (Shape{600, 128}));
  EXPECT_EQ(ids_of(batch), ids_of(dense.tokenize_dense(lines_)));
}

TEST_F(TokenizerTensorsWikiTextTest, WorksInsideParallelDatasetMap) {
  const BertTokenizer tokenizer = BertTokenizer::from_file(vocab_path_);
  const WordTokenizer words(Vocabulary(build_word_vocabulary(lines_)));
  const auto expected = tokenizer.tokenize(lines_);
  const data::Dataset lines = data::Dataset::from_tensor_slices(Tensor::from_strings(lines_));
  // One line per call on 4 threads, and 16-line batches (ragged rows) on 4 threads.
  data::Iterator per_line =
      lines.map([&](const Tree& line) { return tokenizer.tokenize(line.tensor()); }, {.num_parallel_calls = 4})
          .iterator();
  size_t n = 0;
  while (auto ids = per_line.next()) {
    ASSERT_LT(n, expected.size());
    EXPECT_EQ(ids_of(ids->tensor()), expected[n]) << n;
    ++n;
  }
  EXPECT_EQ(n, lines_.size());
  data::Iterator batches =
      lines.batch(16)
          .map(
              [&](const Tree& batch) {
                return Tree{{"bert", tokenizer.tokenize(batch.tensor())}, {"words", words.tokenize(batch.tensor())}};
              },
              {.num_parallel_calls = 4})
          .iterator();
  n = 0;
  while (auto element = batches.next()) {
    const RaggedTensor bert = RaggedTensor::from_tree(element->dict().at("bert"));
    const RaggedTensor word_ids = RaggedTensor::from_tree(element->dict().at("words"));
    for (int64_t r = 0; r < bert.nrows(); ++r, ++n) {
      ASSERT_LT(n, expected.size());
      EXPECT_EQ(ids_of(bert.row(r)), expected[n]) << n;
      EXPECT_EQ(ids_of(word_ids.row(r)), words.tokenize(lines_[n])) << n;
    }
  }
  EXPECT_EQ(n, lines_.size());
}

}  // namespace
}  // namespace chorus::text
