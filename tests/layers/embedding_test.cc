#include "chorus/layers/embedding.h"

#include "chorus/autograd/tape.h"
#include "chorus/ops/ops.h"
#include "tests/layers/layer_conformance.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

TEST(EmbeddingTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<Embedding>(11, 4); },
      .inputs = from_values<int32_t>({1, 0, 10, 3, 3, 7}, Shape{3, 2}),
      .output_shapes = {Shape{3, 2, 4}},
      .weights = {{"embeddings", Shape{11, 4}}},
      .count_params = 44,
  });
  expect_layer_conforms({
      .make = [] { return std::make_shared<Embedding>(5, 2); },
      .inputs = from_values<int64_t>({4, 0, 2}),
      .output_shapes = {Shape{3, 2}},
      .weights = {{"embeddings", Shape{5, 2}}},
      .count_params = 10,
  });
}

TEST(EmbeddingTest, GathersRowsOfTheTable) {
  Embedding embedding(7, 3);
  const Tensor ids = from_values<int64_t>({6, 0, 2, 2, 5}, Shape{5});
  const Tensor y = embedding(ids);
  const auto table = embedding.embeddings().value().to_vector<float>();
  const auto out = y.to_vector<float>();
  const int64_t expected_rows[] = {6, 0, 2, 2, 5};
  for (int i = 0; i < 5; ++i) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(out[i * 3 + c], table[expected_rows[i] * 3 + c]);
  }
}

TEST(EmbeddingTest, CastsFloatIndicesLikeKeras) {
  Embedding embedding(4, 2);
  const Tensor y = embedding(from_values({3.f, 1.f}));
  const Tensor expected = embedding(from_values<int32_t>({3, 1}));
  EXPECT_TRUE(tensors_near(y, expected, 0, 0));
}

TEST(EmbeddingTest, DefaultInitializerIsUniformFiveHundredths) {
  Embedding embedding(1000, 64);
  embedding.build_from(from_values<int32_t>({0}));
  const auto v = embedding.embeddings().value().to_vector<double>();
  double lo = 1, hi = -1, mean = 0;
  for (double x : v) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    mean += x;
  }
  EXPECT_GE(lo, -0.05);
  EXPECT_LT(hi, 0.05);
  EXPECT_LT(lo, -0.0499);
  EXPECT_GT(hi, 0.0499);
  EXPECT_NEAR(mean / static_cast<double>(v.size()), 0, 5e-4);
  EXPECT_EQ(embedding.get_config()["embeddings_initializer"], nlohmann::json::parse(R"({"class_name": "RandomUniform",
                                      "config": {"seed": null, "minval": -0.05, "maxval": 0.05}})"));
}

TEST(EmbeddingTest, GradientScatterAddsIntoTheTable) {
  Embedding embedding(4, 2);
  const Tensor ids = from_values<int32_t>({1, 3, 1});
  embedding.build_from(ids);
  autograd::GradientTape tape;
  const Tensor y = embedding(ids);
  const Tensor weights = from_values({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, Shape{3, 2});
  const auto g = tape.gradient(ops::sum(y * weights), {embedding.embeddings().value()})[0];
  // Row 1 gets rows 0 and 2 of the weights, row 3 gets row 1; rows 0 and 2 get nothing.
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0, 0, 6, 8, 0, 0, 3, 4}));
}

TEST(EmbeddingTest, ConfigIsKerasShaped) {
  Embedding embedding(1683, 32, {.embeddings_initializer = initializers::random_normal(0, 1, 2), .name = "movies"});
  EXPECT_EQ(embedding.get_config(), nlohmann::json::parse(R"({
      "name": "movies", "trainable": true, "dtype": "float32", "input_dim": 1683, "output_dim": 32,
      "embeddings_initializer": {"class_name": "RandomNormal", "config": {"seed": 2, "mean": 0.0, "stddev": 1.0}}})"));
}

TEST(EmbeddingTest, Errors) {
  EXPECT_THAT([] { Embedding bad(0, 4); },
              ThrowsMessage<ValueError>(HasSubstr("Embedding: expected input_dim > 0. Received: input_dim=0")));
  EXPECT_THAT([] { Embedding bad(4, -1); },
              ThrowsMessage<ValueError>(HasSubstr("Embedding: expected output_dim > 0. Received: output_dim=-1")));
  Layer::reset_names();
  Embedding embedding(1683, 8);
  std::vector<int64_t> ids(40, 5);
  ids[17 * 2 + 1] = 2000;  // batch element 17 of a (20, 2) batch
  EXPECT_THAT(
      [&] {
        embedding(from_values(ids, Shape{20, 2}));
      },
      ThrowsMessage<IndexError>(HasSubstr("embedding: index 2000 out of range [0, 1683) in batch element 17")));
  EXPECT_THAT(
      [&] {
        embedding(from_values<int32_t>({3, -1}));
      },
      ThrowsMessage<IndexError>(HasSubstr("embedding: index -1 out of range [0, 1683) in batch element 1")));
  EXPECT_THAT([&] { embedding(Tree::list({from_values<int32_t>({1})})); },
              ThrowsMessage<ValueError>(HasSubstr("embedding: expected a single tensor as input")));
}

}  // namespace
}  // namespace chorus::layers
