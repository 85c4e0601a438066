// Tests for chorus/text/bert_masked_lm_preprocessor.h on a hand-made BERT vocabulary:
// output keys, shapes and dtypes, packing, and that masks depend only on (epoch, element).
#include "chorus/text/bert_masked_lm_preprocessor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "tests/testing/test_names.h"

namespace chorus::text {
namespace {

using namespace testing::test_names;

// ids: [PAD]0 [UNK]1 [CLS]2 [SEP]3 [MASK]4 the5 cat6 sat7 on8 mat9 .10
BertTokenizer tokenizer() {
  return BertTokenizer(Vocabulary({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "."}));
}

TEST(BertMaskedLMPreprocessorTest, OneExample) {
  const BertMaskedLMPreprocessor preprocessor(tokenizer(), {.sequence_length = 10,
                                                            .mask_selection_rate = 0.5,
                                                            .mask_selection_length = 4,
                                                            .mask_token_rate = 1.0,
                                                            .random_token_rate = 0.0});
  const Tree out = preprocessor.call("The cat sat.");
  // [CLS] the cat sat . [SEP] [PAD]...: 4 selectable ids, ceil(0.5 * 4) = 2 chosen, all masked.
  EXPECT_EQ(out["token_ids"].tensor().shape(), (Shape{10}));
  EXPECT_EQ(out["mask_positions"].tensor().shape(), (Shape{4}));
  EXPECT_EQ(out["mask_weights"].tensor().dtype(), kFloat32);
  EXPECT_EQ(out["padding_mask"].tensor().dtype(), kBool);
  EXPECT_THAT(out["segment_ids"].tensor().to_vector<int32_t>(), ElementsAre(0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
  EXPECT_THAT(out["padding_mask"].tensor().to_vector<int32_t>(), ElementsAre(1, 1, 1, 1, 1, 1, 0, 0, 0, 0));
  EXPECT_THAT(out["mask_weights"].tensor().to_vector<float>(), ElementsAre(1, 1, 0, 0));
  const std::vector<int32_t> packed{2, 5, 6, 7, 10, 3, 0, 0, 0, 0};
  std::vector<int32_t> expected = packed;
  const auto positions = out["mask_positions"].tensor().to_vector<int32_t>();
  const auto labels = out["mask_ids"].tensor().to_vector<int32_t>();
  for (int i = 0; i < 2; ++i) {
    const auto p = static_cast<size_t>(positions[static_cast<size_t>(i)]);
    ASSERT_GE(p, 1u);
    ASSERT_LE(p, 4u);
    EXPECT_EQ(labels[static_cast<size_t>(i)], packed[p]);
    expected[p] = 4;
  }
  EXPECT_EQ(out["token_ids"].tensor().to_vector<int32_t>(), expected);
}

TEST(BertMaskedLMPreprocessorTest, SentencePairHasSegments) {
  const BertMaskedLMPreprocessor preprocessor(tokenizer(), {.sequence_length = 8, .mask_selection_length = 2});
  const Tree out = preprocessor.call("the cat", "on mat");
  EXPECT_THAT(out["segment_ids"].tensor().to_vector<int32_t>(), ElementsAre(0, 0, 0, 0, 1, 1, 1, 0));
  EXPECT_THAT(out["padding_mask"].tensor().to_vector<int32_t>(), ElementsAre(1, 1, 1, 1, 1, 1, 1, 0));
}

TEST(BertMaskedLMPreprocessorTest, BatchRowsMatchSingleCalls) {
  const BertMaskedLMPreprocessor preprocessor(tokenizer(), {.sequence_length = 12, .mask_selection_length = 3, .seed = 9});
  const std::vector<std::string> texts{"the cat sat on the mat .", "the mat", "cat cat cat cat cat cat"};
  const Tree batch = preprocessor.call_batch(texts, /*epoch=*/4, /*first_element=*/100);
  EXPECT_EQ(batch["token_ids"].tensor().shape(), (Shape{3, 12}));
  EXPECT_EQ(batch["mask_ids"].tensor().shape(), (Shape{3, 3}));
  const auto ids = batch["token_ids"].tensor().to_vector<int32_t>();
  for (size_t b = 0; b < texts.size(); ++b) {
    const Tree one = preprocessor.call(texts[b], 4, 100 + b);
    EXPECT_EQ(one["token_ids"].tensor().to_vector<int32_t>(),
              std::vector<int32_t>(ids.begin() + static_cast<ptrdiff_t>(b * 12), ids.begin() + static_cast<ptrdiff_t>((b + 1) * 12)))
        << "row " << b;
  }
}

TEST(BertMaskedLMPreprocessorTest, ErrorsNameTheBatchElement) {
  const BertMaskedLMPreprocessor preprocessor(tokenizer(), {.sequence_length = 8, .mask_selection_length = 2});
  EXPECT_THAT([&] { (void)preprocessor.call_batch({"the cat", "mat \xfe"}); },
              ::testing::ThrowsMessage<ValueError>(::testing::HasSubstr(
                  "BertMaskedLMPreprocessor: batch element 1: invalid UTF-8 at byte 4 of 5")));
}

}  // namespace
}  // namespace chorus::text
