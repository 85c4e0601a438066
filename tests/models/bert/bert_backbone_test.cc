#include "chorus/models/bert/bert_backbone.h"

#include "chorus/models/bert/bert_presets.h"
#include "chorus/ops/ops.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::models {
namespace {

using namespace testing::test_names;

BertBackboneConfig small_bert_config() {
  return {.vocabulary_size = 50, .num_layers = 2, .num_heads = 2, .hidden_dim = 8, .intermediate_dim = 16,
          .dropout = 0.1, .max_sequence_length = 12, .num_segments = 2};
}

Tensor backbone_ids(const std::vector<int32_t>& values, const Shape& shape) {
  return from_values<int32_t>(values, shape);
}

TEST(BertBackboneTest, TinyPresetHasKerasHubsParameterCountAndWeightPaths) {
  BertBackbone backbone(find_bert_preset("bert_tiny_en_uncased").config);
  backbone(Tree{{"token_ids", backbone_ids({2, 7, 3, 0}, {1, 4})}});
  EXPECT_EQ(backbone.count_params(), 4385920);  // KerasHub's summary of bert_tiny_en_uncased
  const auto w = backbone.weights();
  ASSERT_EQ(w.size(), 5u + 2 * 16 + 2);
  EXPECT_EQ(w[0].path(), "token_embedding/embeddings");
  EXPECT_EQ(w[1].path(), "position_embedding/embeddings");
  EXPECT_EQ(w[2].path(), "segment_embedding/embeddings");
  EXPECT_EQ(w[3].path(), "embeddings_layer_norm/gamma");
  EXPECT_EQ(w[5].path(), "transformer_layer_0/self_attention_layer/query/kernel");
  EXPECT_EQ(w[5].shape(), (Shape{128, 2, 64}));
  EXPECT_EQ(w[21].path(), "transformer_layer_1/self_attention_layer/query/kernel");
  EXPECT_EQ(w[37].path(), "pooled_dense/kernel");
}

TEST(BertBackboneTest, OutputsAndThePaddingMaskHidesPaddedTokens) {
  BertBackbone backbone(small_bert_config());
  const Tensor mask = from_values<int32_t>(std::vector<int32_t>{1, 1, 1, 0, 0, 1, 1, 1, 1, 1}, Shape{2, 5});
  const Tensor segments = backbone_ids({0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, {2, 5});
  const Tree a = backbone(Tree{{"token_ids", backbone_ids({1, 4, 9, 0, 0, 3, 3, 8, 2, 2}, {2, 5})},
                               {"segment_ids", segments},
                               {"padding_mask", mask}});
  ASSERT_EQ(a["sequence_output"].tensor().shape(), (Shape{2, 5, 8}));
  ASSERT_EQ(a["pooled_output"].tensor().shape(), (Shape{2, 8}));
  // Other ids under the padding of row 0 change nothing of row 0's real tokens.
  const Tree b = backbone(Tree{{"token_ids", backbone_ids({1, 4, 9, 7, 6, 3, 3, 8, 2, 2}, {2, 5})},
                               {"segment_ids", segments},
                               {"padding_mask", mask}});
  const Tensor real_a = ops::slice(a["sequence_output"].tensor(), {0, 0, 0}, {1, 3, 8});
  const Tensor real_b = ops::slice(b["sequence_output"].tensor(), {0, 0, 0}, {1, 3, 8});
  EXPECT_TRUE(tensors_near(real_a, real_b, 1e-6, 1e-6));
  EXPECT_TRUE(tensors_near(a["pooled_output"].tensor(), b["pooled_output"].tensor(), 1e-6, 1e-6));
  // Segment ids matter; without them every token is segment 0.
  const Tree c = backbone(Tree{{"token_ids", backbone_ids({1, 4, 9, 0, 0, 3, 3, 8, 2, 2}, {2, 5})},
                               {"padding_mask", mask}});
  EXPECT_FALSE(tensors_near(a["sequence_output"].tensor(), c["sequence_output"].tensor(), 1e-4, 0));
}

TEST(BertBackboneTest, BadConfigsAndInputsGetClearErrors) {
  BertBackboneConfig c = small_bert_config();
  c.num_heads = 3;
  EXPECT_THAT([&] { BertBackbone{c}; },
              ThrowsMessage<ValueError>(HasSubstr("bert_backbone: num_heads=3 does not divide hidden_dim=8")));
  c = small_bert_config();
  c.vocabulary_size = 0;
  EXPECT_THAT([&] { BertBackbone{c}; },
              ThrowsMessage<ValueError>(HasSubstr("bert_backbone: expected vocabulary_size > 0")));
  EXPECT_THAT([] { find_bert_preset("bert_huge"); },
              ThrowsMessage<ValueError>(HasSubstr("unknown BERT preset 'bert_huge'; known presets: "
                                                  "bert_tiny_en_uncased, bert_small_en_uncased, "
                                                  "bert_medium_en_uncased, bert_base_en_uncased")));
  BertBackbone backbone(small_bert_config());
  EXPECT_THAT([&] { backbone(Tree{{"token_ids", zeros({1, 13}, kInt32)}}); },
              ThrowsMessage<ValueError>(HasSubstr("bert_backbone: token_ids of shape (1, 13) hold sequences of length "
                                                  "13, longer than max_sequence_length=12")));
  EXPECT_THAT([&] { backbone(Tree{{"ids", zeros({1, 3}, kInt32)}}); },
              ThrowsMessage<ValueError>(HasSubstr("bert_backbone: expected a dict with \"token_ids\"")));
  EXPECT_THAT([&] {
    backbone(Tree{{"token_ids", zeros({1, 3}, kInt32)}, {"padding_mask", zeros({1, 4}, kInt32)}});
  }, ThrowsMessage<ShapeError>(HasSubstr("bert_backbone: expected padding_mask of the shape of token_ids (1, 3), got "
                                         "(1, 4)")));
  EXPECT_THAT([&] { backbone(Tree{{"token_ids", backbone_ids({50}, {1, 1})}}); },
              ThrowsMessage<IndexError>(HasSubstr("token_embedding")));
  EXPECT_THAT([&] { backbone.get_layer("pooler"); },
              ThrowsMessage<ValueError>(HasSubstr("bert_backbone: No such layer: pooler. Existing layers are: "
                                                  "['token_embedding', 'position_embedding'")));
}

TEST(BertBackboneTest, ConfigRoundTripsThroughJson) {
  const BertBackboneConfig c = small_bert_config();
  EXPECT_EQ(BertBackboneConfig::from_json(c.to_json()), c);
  EXPECT_EQ(BertBackbone(c).get_config()["hidden_dim"], 8);
  nlohmann::json broken = c.to_json();
  broken.erase("num_heads");
  EXPECT_THAT([&] { BertBackboneConfig::from_json(broken); },
              ThrowsMessage<ValueError>(HasSubstr("BertBackbone config: expected an integer 'num_heads', got nothing")));
}

}  // namespace
}  // namespace chorus::models
