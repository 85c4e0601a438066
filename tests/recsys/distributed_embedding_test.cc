// DistributedEmbedding in one process: the lookups and combiners against the table's own
// rows, keras-rs's default initializer, the tables' sparse gradients, and the error for
// each bad configuration or input. (Across workers: multi_worker_embedding_test.cc.)
#include "chorus/recsys/distributed_embedding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/chorus.h"
#include "tests/testing/test_names.h"

namespace chorus::recsys {
namespace {

using namespace testing::test_names;

std::shared_ptr<TableConfig> make_table(const std::string& name, int64_t rows, int64_t dim,
                                        std::string combiner = "mean") {
  return std::make_shared<TableConfig>(
      TableConfig{.name = name, .vocabulary_size = rows, .embedding_dim = dim, .combiner = std::move(combiner)});
}

// Row `id` of a (rows, dim) table.
std::vector<float> table_row(const Variable& table, int64_t id) {
  const std::vector<float> all = table.value().to_vector<float>();
  const int64_t dim = table.shape()[1];
  return {all.begin() + id * dim, all.begin() + (id + 1) * dim};
}

TEST(DistributedEmbeddingTest, LooksUpEachFeatureInItsTableAndSharedTablesOnce) {
  auto users = make_table("users", 10, 4), items = make_table("items", 6, 4, "sum");
  DistributedEmbedding embedding(
      {{.name = "user", .table = users}, {.name = "item", .table = items}, {.name = "also_item", .table = items}},
      "distributed_embedding");
  Tree out = embedding(Tree{{"user", from_values<int32_t>({3, 9}, Shape{2})},
                            {"item", from_values<int64_t>({5, 0}, Shape{2})},
                            {"also_item", from_values<int64_t>({1, 2, 4, 4}, Shape{2, 2})}});
  ASSERT_EQ(embedding.weights().size(), 2u);  // "items" made once
  const Variable& u = embedding.embeddings("users");
  const Variable& it = embedding.embeddings("items");
  EXPECT_EQ(u.path(), "distributed_embedding/users");
  EXPECT_EQ(out["user"].tensor().shape(), (Shape{2, 4}));
  const std::vector<float> user = out["user"].tensor().to_vector<float>();
  EXPECT_EQ(std::vector<float>(user.begin() + 4, user.end()), table_row(u, 9));
  const std::vector<float> item = out["item"].tensor().to_vector<float>();
  EXPECT_EQ(std::vector<float>(item.begin(), item.begin() + 4), table_row(it, 5));
  // (2, 2) ids with "sum": each example's two rows added.
  const std::vector<float> both = out["also_item"].tensor().to_vector<float>();
  for (int k = 0; k < 4; ++k) {
    EXPECT_FLOAT_EQ(both[static_cast<size_t>(k)], table_row(it, 1)[k] + table_row(it, 2)[k]);
    EXPECT_FLOAT_EQ(both[static_cast<size_t>(4 + k)], 2 * table_row(it, 4)[k]);
  }
}

TEST(DistributedEmbeddingTest, MeanAndSqrtnCombineSeveralIdsPerExample) {
  for (const char* combiner : {"mean", "sqrtn"}) {
    auto t = make_table("t", 5, 3, combiner);
    DistributedEmbedding embedding({{.name = "f", .table = t, .input_shape = {1, 4}, .output_shape = {1, 3}}});
    const std::vector<float> got = embedding(from_values<int32_t>({0, 1, 3, 3}, Shape{1, 4})).to_vector<float>();
    const Variable& table = embedding.embeddings("t");
    const double scale = std::string(combiner) == "mean" ? 0.25 : 0.5;  // 1/4, 1/sqrt(4)
    for (int k = 0; k < 3; ++k) {
      const double sum = table_row(table, 0)[k] + table_row(table, 1)[k] + 2.0 * table_row(table, 3)[k];
      EXPECT_NEAR(got[static_cast<size_t>(k)], sum * scale, 1e-6) << combiner;
    }
  }
}

TEST(DistributedEmbeddingTest, DefaultInitializerIsTruncatedNormalOfStddevOneOverSqrtDim) {
  layers::set_random_seed(1);
  DistributedEmbedding embedding({{.name = "f", .table = make_table("t", 4000, 16)}});
  embedding(from_values<int32_t>({0}, Shape{1}));
  const std::vector<float> values = embedding.embeddings("t").value().to_vector<float>();
  double sum = 0, squares = 0, largest = 0;
  for (float v : values) {
    sum += v;
    squares += static_cast<double>(v) * v;
    largest = std::max(largest, std::abs(static_cast<double>(v)));
  }
  const double n = static_cast<double>(values.size());
  const double stddev = 0.25;  // 1 / sqrt(16); cut at 2 sigma, the draws' stddev is 0.88 of it
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(std::sqrt(squares / n), 0.8796 * stddev, 0.01);
  EXPECT_LE(largest, 2 * stddev);
}

TEST(DistributedEmbeddingTest, TableGradientsAreTheRowsABatchRead) {
  auto t = make_table("t", 8, 2, "sum");
  DistributedEmbedding embedding({{.name = "f", .table = t}});
  Tensor ids = from_values<int32_t>({1, 5, 1}, Shape{3});
  embedding(ids);
  autograd::GradientTape tape;
  Tensor loss = ops::sum(embedding(ids));
  std::vector<autograd::IndexedSlices> sparse;
  const std::vector<Tensor> sources{embedding.embeddings("t").value()};
  tape.gradient(loss, sources, &sparse);
  ASSERT_TRUE(sparse[0].defined());
  const std::vector<float> dense = sparse[0].to_dense().to_vector<float>();
  EXPECT_EQ(dense, (std::vector<float>{0, 0, 2, 2, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0}));
}

TEST(DistributedEmbeddingTest, SplitTablesAreLookedUpOnlyInsideAStep) {
  DistributedEmbedding embedding({{.name = "f", .table = make_table("t", 8, 2)}}, "distributed_embedding");
  embedding(from_values<int32_t>({1}, Shape{1}));
  embedding.embeddings("t").keep_rows(4, 4);  // as the second of two workers does
  EXPECT_EQ(embedding.embeddings("t").whole_shape(), (Shape{8, 2}));
  EXPECT_THAT([&] { embedding(from_values<int32_t>({1}, Shape{1})); },
              ThrowsMessage<ValueError>(HasSubstr("distributed_embedding: its tables are split across the workers of "
                                                  "a job: look them up inside the model's fit, evaluate or predict")));
}

// Scores user x item by the dot product of their rows.
class DotProductModel : public models::Model {
 public:
  DotProductModel()
      : embedding_(add<DistributedEmbedding>(std::vector<FeatureConfig>{
            {.name = "user", .table = make_table("users", 30, 4)}, {.name = "item", .table = make_table("items", 20, 4)}})) {}
  Tree call(const Tree& x, bool) override {
    Tree rows = (*embedding_)(x);
    return ops::sum(rows["user"].tensor() * rows["item"].tensor(), 1, true);
  }

 private:
  DistributedEmbedding* embedding_;
};

// In one process the replicas share whole tables, as Embedding's: MirroredStrategy over 2
// devices trains one device's weights.
TEST(DistributedEmbeddingTest, MirroredStrategyInOneProcessTrainsOneDevicesWeights) {
  backend::cpu::set_intra_op_threads(1);
  chorus::set_cpu_devices(2);
  Generator gen(3);
  Tensor users = ops::cast(uniform(Shape{96}, gen, 0, 29), kInt32), items = ops::cast(uniform(Shape{96}, gen, 0, 19), kInt32);
  const data::Dataset data =
      data::Dataset::from_tensor_slices(Tree::list({Tree{{"user", users}, {"item", items}}, uniform(Shape{96, 1}, gen, 0, 1)}))
          .batch(16);
  const auto train = [&](bool mirrored) {
    layers::set_random_seed(5);
    auto model = std::make_unique<DotProductModel>();
    std::optional<distribute::MirroredStrategy> strategy;
    if (mirrored) strategy.emplace(std::vector<Device>{Device::cpu(0), Device::cpu(1)});
    {
      std::optional<distribution::DistributionScope> scope;
      if (strategy) scope.emplace(strategy->scope());
      model->compile({.optimizer = optimizers::Adagrad(0.2), .loss = "mse"});
    }
    model->fit(data, {.epochs = 2, .verbose = 0});
    return model;
  };
  auto one = train(false), two = train(true);
  chorus::set_cpu_devices(0);
  ASSERT_EQ(two->weights().size(), 2u);
  EXPECT_EQ(two->weights()[0].shape(), (Shape{30, 4}));  // whole
  EXPECT_EQ(two->distribution()->num_replicas(), 2);
  EXPECT_LE(models::max_relative_difference(two->weights(), one->weights()), 1e-5);
  layers::set_random_seed(5);
  DotProductModel untrained;
  untrained(Tree{{"user", users.first_axis_slice(0, 1)}, {"item", items.first_axis_slice(0, 1)}});
  EXPECT_GT(models::max_relative_difference(two->weights(), untrained.weights()), 1e-3);  // it trained
}

TEST(DistributedEmbeddingTest, BadConfigurationsAndInputsAreNamed) {
  auto t = make_table("t", 8, 2);
  const auto construct_error = [](std::vector<FeatureConfig> features) {
    try {
      DistributedEmbedding embedding(std::move(features));
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(construct_error({}), HasSubstr("DistributedEmbedding: expected at least one feature config"));
  EXPECT_THAT(construct_error({{.name = "f"}}), HasSubstr("DistributedEmbedding: feature 'f' has no table"));
  EXPECT_THAT(construct_error({{.table = t}}), HasSubstr("DistributedEmbedding: a feature has no name"));
  EXPECT_THAT(construct_error({{.name = "f", .table = t}, {.name = "f", .table = t}}),
              HasSubstr("DistributedEmbedding: two features are named 'f'"));
  EXPECT_THAT(construct_error({{.name = "f", .table = t}, {.name = "g", .table = make_table("t", 3, 2)}}),
              HasSubstr("DistributedEmbedding: two tables are named 't'"));
  EXPECT_THAT(construct_error({{.name = "f", .table = make_table("t", 0, 2)}}),
              HasSubstr("DistributedEmbedding: table 't': expected vocabulary_size >= 1 and embedding_dim >= 1, got 0 and 2"));
  EXPECT_THAT(construct_error({{.name = "f", .table = make_table("t", 8, 2, "max")}}),
              HasSubstr("DistributedEmbedding: table 't': unknown combiner 'max' (expected mean, sum or sqrtn)"));
  EXPECT_THAT(construct_error({{.name = "f", .table = t, .output_shape = {4, 3}}}),
              HasSubstr("DistributedEmbedding: feature 'f': output_shape (4, 3) does not end in table 't''s "
                        "embedding_dim 2"));
  EXPECT_THAT(construct_error({{.name = "f", .table = t, .input_shape = {4, 2, 1}}}),
              HasSubstr("DistributedEmbedding: feature 'f': input_shape (4, 2, 1) must have 1 or 2 dimensions"));

  DistributedEmbedding embedding({{.name = "f", .table = t}, {.name = "g", .table = t, .input_shape = {2, 3}}},
                                 "distributed_embedding");
  EXPECT_THAT([&] { embedding(Tree{{"f", from_values<int32_t>({1}, Shape{1})}}); },
              ThrowsMessage<ValueError>(HasSubstr("distributed_embedding: expected a dict of the features f, g")));
  EXPECT_THAT(
      [&] {
        embedding(Tree{{"f", from_values<int32_t>({1, 8}, Shape{2})}, {"g", from_values<int32_t>({0, 0, 0}, Shape{1, 3})}});
      },
      ThrowsMessage<IndexError>(HasSubstr("distributed_embedding: feature 'f': index 8 out of range [0, 8) in batch "
                                          "element 1")));
  EXPECT_THAT(
      [&] {
        embedding(Tree{{"f", from_values<int32_t>({1}, Shape{1})}, {"g", from_values<int32_t>({0, 0}, Shape{1, 2})}});
      },
      ThrowsMessage<ValueError>(HasSubstr("distributed_embedding: feature 'g': expected ids of shape (2, 3), got (1, 2)")));
  EXPECT_THAT([&] { (void)embedding.embeddings("nope"); },
              ThrowsMessage<ValueError>(HasSubstr("distributed_embedding: no table named 'nope'")));
}

}  // namespace
}  // namespace chorus::recsys
