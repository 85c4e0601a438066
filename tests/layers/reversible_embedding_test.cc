#include "chorus/layers/reversible_embedding.h"

#include "chorus/autograd/tape.h"
#include "chorus/ops/ops.h"
#include "tests/layers/layer_conformance.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

// A built (3, 2) layer whose table is [[1, 2], [3, 4], [5, 6]].
ReversibleEmbedding hand_set_reversible_embedding(ReversibleEmbeddingOptions options = {}) {
  ReversibleEmbedding layer(3, 2, std::move(options));
  layer.build_from(from_values<int32_t>({0}));
  layer.embeddings().assign(from_values({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, Shape{3, 2}));
  return layer;
}

TEST(ReversibleEmbeddingTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<ReversibleEmbedding>(11, 4); },
      .inputs = from_values<int32_t>({1, 0, 10, 3, 3, 7}, Shape{3, 2}),
      .output_shapes = {Shape{3, 2, 4}},
      .weights = {{"embeddings", Shape{11, 4}}},
      .count_params = 44,
  });
  expect_layer_conforms({
      .make =
          [] {
            return std::make_shared<ReversibleEmbedding>(11, 4, ReversibleEmbeddingOptions{.tie_weights = false});
          },
      .inputs = from_values<int64_t>({1, 0, 10}),
      .output_shapes = {Shape{3, 4}},
      .weights = {{"embeddings", Shape{11, 4}}, {"reverse_embeddings", Shape{4, 11}}},
      .count_params = 88,
  });
}

TEST(ReversibleEmbeddingTest, ForwardGathersAndTiedReverseMultipliesByTheTransposedTable) {
  ReversibleEmbedding layer = hand_set_reversible_embedding();
  EXPECT_EQ(layer(from_values<int32_t>({2, 0})).to_vector<float>(), (std::vector<float>{5, 6, 1, 2}));
  // [2, 3] . each row: 2 + 6, 6 + 12, 10 + 18; a (1, 2, 2) batch keeps its leading axes.
  const Tensor logits = layer.reverse(from_values({2.f, 3.f, 1.f, -1.f}, Shape{1, 2, 2}));
  EXPECT_EQ(logits.shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(logits.to_vector<float>(), (std::vector<float>{8, 18, 28, -1, -1, -1}));
}

TEST(ReversibleEmbeddingTest, UntiedReverseUsesItsOwnKernel) {
  ReversibleEmbedding layer = hand_set_reversible_embedding({.tie_weights = false});
  ASSERT_TRUE(layer.reverse_embeddings().defined());
  EXPECT_EQ(layer.reverse_embeddings().path(), layer.name() + "/reverse_embeddings");
  layer.reverse_embeddings().assign(from_values({1.f, 0.f, 2.f, 0.f, 1.f, -1.f}, Shape{2, 3}));
  EXPECT_EQ(layer.reverse(from_values({2.f, 3.f}, Shape{1, 2})).to_vector<float>(), (std::vector<float>{2, 3, 1}));
  // The forward table is unchanged by the reverse kernel.
  EXPECT_EQ(layer(from_values<int32_t>({1})).to_vector<float>(), (std::vector<float>{3, 4}));
}

TEST(ReversibleEmbeddingTest, LogitSoftCapSquashesLogits) {
  ReversibleEmbedding layer = hand_set_reversible_embedding({.logit_soft_cap = 10.0});
  const auto logits = layer.reverse(from_values({2.f, 3.f}, Shape{1, 2})).to_vector<double>();
  const double raw[] = {8, 18, 28};
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(logits[i], 10 * std::tanh(raw[i] / 10), 1e-5) << i;
}

TEST(ReversibleEmbeddingTest, TiedGradientsOfBothUsesAdd) {
  ReversibleEmbedding layer = hand_set_reversible_embedding();
  const Tensor table = layer.embeddings().value();
  const Tensor ids = from_values<int32_t>({1});
  // loss = logits[k] = E[1] . E[k]. For k = 0 the forward use gives row 1 the gradient E[0]
  // and the reverse use gives row 0 the gradient E[1]; for k = 1 both land on row 1: 2 E[1].
  auto gradient_of_logit = [&](int k, std::vector<autograd::IndexedSlices>* sparse) {
    autograd::GradientTape tape;
    const Tensor logits = layer.reverse(layer(ids));  // (1, 3)
    const Tensor pick = from_values({k == 0 ? 1.f : 0.f, k == 1 ? 1.f : 0.f, k == 2 ? 1.f : 0.f}, Shape{1, 3});
    const std::vector<Tensor> sources = {table};
    return tape.gradient(ops::sum(logits * pick), sources, sparse)[0];
  };
  EXPECT_EQ(gradient_of_logit(0, nullptr).to_vector<float>(), (std::vector<float>{3, 4, 1, 2, 0, 0}));
  EXPECT_EQ(gradient_of_logit(1, nullptr).to_vector<float>(), (std::vector<float>{0, 0, 6, 8, 0, 0}));
  // Where the trainer asks for sparse gradients the dense reverse use folds the rows in.
  std::vector<autograd::IndexedSlices> sparse;
  EXPECT_EQ(gradient_of_logit(1, &sparse).to_vector<float>(), (std::vector<float>{0, 0, 6, 8, 0, 0}));
  ASSERT_EQ(sparse.size(), 1u);
  EXPECT_FALSE(sparse[0].defined());

  // Central differences on a random table, ids repeated across a (2, 2) batch.
  ReversibleEmbedding random(5, 3, {.embeddings_initializer = initializers::random_normal(0.0, 1.0, 3)});
  const Tensor batch = from_values<int32_t>({0, 4, 4, 1}, Shape{2, 2});
  random.build_from(batch);
  testing::expect_gradients_match([&](const std::vector<Tensor>&) { return random.reverse(random(batch)); },
                                  {random.embeddings().value()});
}

TEST(ReversibleEmbeddingTest, UntiedGradientsGoToEachTable) {
  ReversibleEmbedding layer(5, 3,
                            {.tie_weights = false, .embeddings_initializer = initializers::random_normal(0, 1, 4)});
  const Tensor batch = from_values<int32_t>({3, 0, 3}, Shape{3});
  layer.build_from(batch);
  testing::expect_gradients_match([&](const std::vector<Tensor>&) { return layer.reverse(layer(batch)); },
                                  {layer.embeddings().value(), layer.reverse_embeddings().value()});
}

TEST(ReversibleEmbeddingTest, ReverseBuildsAnUnbuiltLayer) {
  ReversibleEmbedding layer(6, 2);
  EXPECT_EQ(layer.reverse(zeros(Shape{4, 2})).shape(), (Shape{4, 6}));
  EXPECT_TRUE(layer.built());
  EXPECT_EQ(layer.weights().size(), 1u);
}

TEST(ReversibleEmbeddingTest, ConfigIsKerasShapedAndRoundTrips) {
  ReversibleEmbedding layer(30522, 768,
                            {.tie_weights = false,
                             .embeddings_initializer = initializers::truncated_normal(0.0, 0.02, 1),
                             .name = "token_embedding"});
  EXPECT_EQ(layer.get_config(), nlohmann::json::parse(R"({
      "name": "token_embedding", "trainable": true, "dtype": "float32", "input_dim": 30522, "output_dim": 768,
      "embeddings_initializer": {"class_name": "TruncatedNormal", "config": {"seed": 1, "mean": 0.0, "stddev": 0.02}},
      "tie_weights": false, "reverse_dtype": null, "logit_soft_cap": null})"));
  ReversibleEmbedding capped(4, 2, {.logit_soft_cap = 30.0});
  const auto clone = ReversibleEmbedding::from_config(capped.get_config());
  EXPECT_EQ(clone->get_config(), capped.get_config());
  EXPECT_EQ(clone->get_config()["logit_soft_cap"], 30.0);
  EXPECT_TRUE(clone->tie_weights());
  // Keras's own config (with mask_zero and the regularizer keys) reads too.
  const auto keras = ReversibleEmbedding::from_config(nlohmann::json::parse(R"({
      "name": "re", "input_dim": 5, "output_dim": 3, "embeddings_initializer": "uniform", "mask_zero": false,
      "embeddings_regularizer": null, "tie_weights": true, "reverse_dtype": null, "logit_soft_cap": null})"));
  EXPECT_EQ(keras->name(), "re");
  EXPECT_EQ(keras->input_dim(), 5);
}

TEST(ReversibleEmbeddingTest, Errors) {
  EXPECT_THAT([] { ReversibleEmbedding bad(0, 4); },
              ThrowsMessage<ValueError>(
                  HasSubstr("ReversibleEmbedding: expected input_dim > 0. Received: input_dim=0")));
  EXPECT_THAT(
      [] { ReversibleEmbedding bad(4, 0); },
      ThrowsMessage<ValueError>(HasSubstr("ReversibleEmbedding: expected output_dim > 0. Received: output_dim=0")));
  EXPECT_THAT([] { ReversibleEmbedding bad(4, 2, {.logit_soft_cap = 0.0}); },
              ThrowsMessage<ValueError>(
                  HasSubstr("ReversibleEmbedding: expected logit_soft_cap > 0. Received: logit_soft_cap=0")));
  ReversibleEmbedding layer = hand_set_reversible_embedding({.name = "tokens"});
  EXPECT_THAT([&] { layer(from_values<int32_t>({0, 3})); },
              ThrowsMessage<IndexError>(HasSubstr("tokens: index 3 out of range [0, 3) in batch element 1")));
  EXPECT_THAT([&] { layer.reverse(zeros(Shape{2, 5, 4})); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("tokens: reverse expected hidden states with last dim 2, got shape (2, 5, 4)")));
  const nlohmann::json with_reverse_dtype = {{"input_dim", 3}, {"output_dim", 2}, {"reverse_dtype", "bf16"}};
  EXPECT_THAT([&] { ReversibleEmbedding::from_config(with_reverse_dtype); },
              ThrowsMessage<ValueError>(HasSubstr("reverse_dtype is not supported (logits take the table's dtype). "
                                                  "Received: reverse_dtype=\"bf16\"")));
  EXPECT_THAT([] { ReversibleEmbedding::from_config({{"input_dim", 3}, {"output_dim", 2}, {"mask_zero", true}}); },
              ThrowsMessage<ValueError>(HasSubstr("mask_zero=true is not supported")));
}

}  // namespace
}  // namespace chorus::layers
