#include "chorus/layers/token_and_position_embedding.h"

#include "chorus/autograd/tape.h"
#include "chorus/ops/ops.h"
#include "tests/layers/layer_conformance.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

// A built layer with vocabulary 4, sequence_length 3, embedding_dim 2 and hand-set tables:
// tokens [[0, 0], [1, 10], [2, 20], [3, 30]], positions [[0.5, 0], [0, 0.5], [0.25, 0.25]].
TokenAndPositionEmbedding hand_set_token_and_position_embedding() {
  TokenAndPositionEmbedding layer(4, 3, 2, {.name = "embed"});
  layer.build_from(from_values<int32_t>({0}, Shape{1, 1}));
  layer.token_embedding().embeddings().assign(from_values({0.f, 0.f, 1.f, 10.f, 2.f, 20.f, 3.f, 30.f}, Shape{4, 2}));
  layer.position_embedding().position_embeddings().assign(
      from_values({0.5f, 0.f, 0.f, 0.5f, 0.25f, 0.25f}, Shape{3, 2}));
  return layer;
}

TEST(TokenAndPositionEmbeddingTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<TokenAndPositionEmbedding>(10, 5, 4); },
      .inputs = from_values<int32_t>({1, 0, 9, 3, 3, 7}, Shape{2, 3}),
      .output_shapes = {Shape{2, 3, 4}},
      .weights = {{"token_embedding/embeddings", Shape{10, 4}}, {"position_embedding/embeddings", Shape{5, 4}}},
      .count_params = 60,
  });
  expect_layer_conforms({
      .make =
          [] {
            return std::make_shared<TokenAndPositionEmbedding>(10, 5, 4,
                                                               TokenAndPositionEmbeddingOptions{.tie_weights = false});
          },
      .inputs = from_values<int64_t>({1, 0, 9, 3, 3, 7, 2, 2, 2, 2}, Shape{2, 5}),
      .output_shapes = {Shape{2, 5, 4}},
      .weights = {{"token_embedding/embeddings", Shape{10, 4}},
                  {"token_embedding/reverse_embeddings", Shape{4, 10}},
                  {"position_embedding/embeddings", Shape{5, 4}}},
      .count_params = 100,
  });
}

TEST(TokenAndPositionEmbeddingTest, SumsTokenAndPositionRows) {
  TokenAndPositionEmbedding layer = hand_set_token_and_position_embedding();
  const Tensor y = layer(from_values<int32_t>({3, 0, 1, 1, 2, 3}, Shape{2, 3}));
  EXPECT_EQ(y.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3.5f, 30, 0, 0.5f, 1.25f, 10.25f,  //
                                                       1.5f, 10, 2, 20.5f, 3.25f, 30.25f}));
  // A shorter sequence reads the first position rows only; unbatched ids (T,) work too.
  EXPECT_EQ(layer(from_values<int32_t>({2}, Shape{1, 1})).to_vector<float>(), (std::vector<float>{2.5f, 20}));
  EXPECT_EQ(layer(from_values<int32_t>({1, 1})).to_vector<float>(), (std::vector<float>{1.5f, 10, 1, 10.5f}));
}

TEST(TokenAndPositionEmbeddingTest, WeightPathsAreKeras3s) {
  TokenAndPositionEmbedding layer = hand_set_token_and_position_embedding();
  std::vector<std::string> paths;
  for (const Variable& v : layer.weights()) paths.push_back(v.path());
  EXPECT_EQ(paths,
            (std::vector<std::string>{"embed/token_embedding/embeddings", "embed/position_embedding/embeddings"}));
  EXPECT_EQ(layer.layers().size(), 2u);
  EXPECT_EQ(layer.token_embedding().class_name(), "ReversibleEmbedding");
  EXPECT_EQ(layer.position_embedding().sequence_length(), 3);
}

TEST(TokenAndPositionEmbeddingTest, GradientsReachBothTables) {
  TokenAndPositionEmbedding layer(6, 4, 3, {.embeddings_initializer = initializers::random_normal(0.0, 1.0, 7)});
  const Tensor ids = from_values<int32_t>({5, 0, 5, 2, 2, 1}, Shape{2, 3});
  layer.build_from(ids);
  testing::expect_gradients_match([&](const std::vector<Tensor>&) { return layer(ids); },
                                  {layer.token_embedding().embeddings().value(),
                                   layer.position_embedding().position_embeddings().value()});
  // Through the tied reverse projection too (a masked-LM head's logits).
  testing::expect_gradients_match(
      [&](const std::vector<Tensor>&) { return layer.token_embedding().reverse(layer(ids)); },
      {layer.token_embedding().embeddings().value(), layer.position_embedding().position_embeddings().value()});
}

TEST(TokenAndPositionEmbeddingTest, InitializerIsUsedForBothTables) {
  // BERT's TruncatedNormal(stddev=0.02): both tables stay within two standard deviations.
  TokenAndPositionEmbedding bert(1000, 128, 32, {.embeddings_initializer = initializers::truncated_normal(0.0, 0.02)});
  bert.build_from(from_values<int32_t>({0}, Shape{1, 1}));
  for (const Variable& v : bert.weights()) {
    const auto values = v.value().to_vector<double>();
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    EXPECT_GE(*lo, -0.04) << v.path();
    EXPECT_LE(*hi, 0.04) << v.path();
    EXPECT_LT(*lo, -0.035) << v.path();  // and not narrower
  }
  // The default is Keras's "uniform", RandomUniform(-0.05, 0.05).
  EXPECT_EQ(TokenAndPositionEmbedding(5, 2, 2).get_config()["embeddings_initializer"]["class_name"], "RandomUniform");
}

TEST(TokenAndPositionEmbeddingTest, ConfigIsKerasShapedAndRoundTrips) {
  TokenAndPositionEmbedding layer(30522, 512, 768, {.tie_weights = false, .name = "embeddings"});
  EXPECT_EQ(layer.get_config(), nlohmann::json::parse(R"({
      "name": "embeddings", "trainable": true, "dtype": "float32", "vocabulary_size": 30522, "sequence_length": 512,
      "embedding_dim": 768, "tie_weights": false, "mask_zero": false,
      "embeddings_initializer": {"class_name": "RandomUniform",
                                 "config": {"seed": null, "minval": -0.05, "maxval": 0.05}}})"));
  const auto clone = TokenAndPositionEmbedding::from_config(layer.get_config());
  EXPECT_EQ(clone->get_config(), layer.get_config());
  EXPECT_FALSE(clone->token_embedding().tie_weights());
  EXPECT_EQ(clone->token_embedding().name(), "embeddings/token_embedding");
}

TEST(TokenAndPositionEmbeddingTest, Errors) {
  EXPECT_THAT([] { TokenAndPositionEmbedding bad(0, 4, 2); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "TokenAndPositionEmbedding: expected vocabulary_size > 0. Received: vocabulary_size=0")));
  EXPECT_THAT([] { TokenAndPositionEmbedding bad(4, -1, 2); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "TokenAndPositionEmbedding: expected sequence_length > 0. Received: sequence_length=-1")));
  EXPECT_THAT([] { TokenAndPositionEmbedding bad(4, 4, 0); },
              ThrowsMessage<ValueError>(
                  HasSubstr("TokenAndPositionEmbedding: expected embedding_dim > 0. Received: embedding_dim=0")));
  TokenAndPositionEmbedding layer = hand_set_token_and_position_embedding();
  EXPECT_THAT([&] { layer(from_values<int32_t>({0, 1, 2, 4}, Shape{2, 2})); },
              ThrowsMessage<IndexError>(
                  HasSubstr("embed/token_embedding: index 4 out of range [0, 4) in batch element 1")));
  EXPECT_THAT([&] { layer(from_values<int32_t>({0, 1, 2, 3}, Shape{1, 4})); },
              ThrowsMessage<ValueError>(HasSubstr("embed/position_embedding: the input's sequence length 4 (axis -2 of "
                                                  "(1, 4, 2)) exceeds sequence_length 3")));
  TokenAndPositionEmbedding unbuilt(4, 4, 2, {.name = "e"});
  EXPECT_THAT([&] { unbuilt(scalar(1.0, kInt32)); },
              ThrowsMessage<ValueError>(HasSubstr("Input 0 of layer \"e\" is incompatible with the layer: expected "
                                                  "min_ndim=1, found ndim=0. Full shape received: ()")));
  EXPECT_THAT([] { TokenAndPositionEmbedding::from_config({{"vocabulary_size", 3}, {"sequence_length", 2},
                                                           {"embedding_dim", 2}, {"mask_zero", true}}); },
              ThrowsMessage<ValueError>(HasSubstr("mask_zero=true is not supported")));
}

}  // namespace
}  // namespace chorus::layers
