#include "chorus/layers/position_embedding.h"

#include "chorus/autograd/tape.h"
#include "chorus/ops/ops.h"
#include "tests/layers/layer_conformance.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

// A built PositionEmbedding(5) over 2 features whose table is 0, 1, ..., 9 row by row.
PositionEmbedding counting_position_embedding() {
  PositionEmbedding layer(5, {.name = "positions"});
  layer.build_from(zeros(Shape{1, 5, 2}));
  layer.position_embeddings().assign(from_values({0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f}, Shape{5, 2}));
  return layer;
}

TEST(PositionEmbeddingTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<PositionEmbedding>(10); },
      .inputs = testing::random_tensor(Shape{2, 4, 3}, 1),
      .output_shapes = {Shape{2, 4, 3}},
      .weights = {{"embeddings", Shape{10, 3}}},
      .count_params = 30,
  });
  expect_layer_conforms({  // leading axes beyond the batch broadcast too
      .make = [] { return std::make_shared<PositionEmbedding>(3); },
      .inputs = testing::random_tensor(Shape{2, 2, 3, 4}, 2),
      .output_shapes = {Shape{2, 2, 3, 4}},
      .weights = {{"embeddings", Shape{3, 4}}},
      .count_params = 12,
  });
}

TEST(PositionEmbeddingTest, OutputsTheFirstTRowsForEveryBatchElement) {
  PositionEmbedding layer = counting_position_embedding();
  // The input's values do not matter, only its shape (2, 3, 2).
  const Tensor y = layer(testing::random_tensor(Shape{2, 3, 2}, 3));
  EXPECT_EQ(y.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}));
  // The whole table for T == sequence_length; one row for T == 1.
  EXPECT_EQ(layer(zeros(Shape{1, 5, 2})).to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(layer(zeros(Shape{3, 1, 2})).to_vector<float>(), (std::vector<float>{0, 1, 0, 1, 0, 1}));
}

TEST(PositionEmbeddingTest, TableGradientSumsOverTheBatch) {
  PositionEmbedding layer = counting_position_embedding();
  const Tensor x = zeros(Shape{2, 2, 2});
  autograd::GradientTape tape;
  const Tensor y = layer(x);
  const Tensor w = from_values({1.f, 2.f, 3.f, 4.f, 10.f, 20.f, 30.f, 40.f}, Shape{2, 2, 2});
  const auto g = tape.gradient(ops::sum(y * w), {layer.position_embeddings().value()})[0];
  // Rows 0 and 1 get w summed over the batch; rows 2..4 were not read.
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{11, 22, 33, 44, 0, 0, 0, 0, 0, 0}));
  // And the tape agrees with central differences.
  testing::expect_gradients_match([&](const std::vector<Tensor>&) { return layer(x); },
                                  {layer.position_embeddings().value()});
}

TEST(PositionEmbeddingTest, ConfigIsKerasShapedAndDefaultsToGlorotUniform) {
  PositionEmbedding layer(512, {.name = "position_embedding"});
  EXPECT_EQ(layer.get_config(), nlohmann::json::parse(R"({
      "name": "position_embedding", "trainable": true, "dtype": "float32", "sequence_length": 512,
      "initializer": {"class_name": "GlorotUniform", "config": {"seed": null}}})"));
  PositionEmbedding bert(16, {.initializer = initializers::truncated_normal(0.0, 0.02, 5)});
  const auto clone = PositionEmbedding::from_config(bert.get_config());
  EXPECT_EQ(clone->get_config(), bert.get_config());
  // The seeded initializer gives the clone the same table.
  bert.build_from(zeros(Shape{1, 4, 3}));
  clone->build_from(zeros(Shape{1, 4, 3}));
  EXPECT_TRUE(tensors_near(clone->position_embeddings().value(), bert.position_embeddings().value(), 0, 0));
}

TEST(PositionEmbeddingTest, Errors) {
  EXPECT_THAT([] { PositionEmbedding bad(0); },
              ThrowsMessage<ValueError>(
                  HasSubstr("PositionEmbedding: expected sequence_length > 0. Received: sequence_length=0")));
  PositionEmbedding layer = counting_position_embedding();
  EXPECT_THAT([&] { layer(zeros(Shape{2, 6, 2})); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "positions: the input's sequence length 6 (axis -2 of (2, 6, 2)) exceeds sequence_length 5")));
  EXPECT_THAT([&] { layer(zeros(Shape{2, 3, 4})); },
              ThrowsMessage<ValueError>(HasSubstr("Input 0 of layer \"positions\" is incompatible with the layer: "
                                                  "expected axis -1 of input shape to have value 2, but received "
                                                  "input with shape (2, 3, 4)")));
  PositionEmbedding unbuilt(4, {.name = "pos"});
  EXPECT_THAT([&] { unbuilt(zeros(Shape{4})); },
              ThrowsMessage<ValueError>(HasSubstr("Input 0 of layer \"pos\" is incompatible with the layer: "
                                                  "expected min_ndim=2, found ndim=1. Full shape received: (4,)")));
  EXPECT_FALSE(unbuilt.built());
  EXPECT_THAT([&] { layer(Tree::list({zeros(Shape{1, 2, 2})})); },
              ThrowsMessage<ValueError>(HasSubstr("positions: expected a single tensor as input")));
}

}  // namespace
}  // namespace chorus::layers
