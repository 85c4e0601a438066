// suggest_layout_map: Megatron's pairs for an MLP, heads and feedforward pairs for
// BERT-tiny, printed as C++ that compiles; both layouts train to one device's weights; and
// the errors for a mesh without the model axis and an unbuilt model.
#include "chorus/models/suggest_layout_map.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/chorus.h"
#include "tests/models/bert/mlm_batch.h"
#include "tests/testing/logical_devices.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::models {
namespace {

using namespace testing::test_names;
namespace dist = chorus::distribution;

using SuggestLayoutMapTest = testing::LogicalDevicesTest<4>;

dist::DeviceMesh mesh(int64_t batch, int64_t model) {
  std::vector<Device> devices;
  for (int i = 0; i < batch * model; ++i) devices.push_back(Device::cpu(i));
  return dist::DeviceMesh({batch, model}, {"batch", "model"}, devices);
}

std::unique_ptr<Model> mlp() {
  layers::set_random_seed(5);
  Tensor x = layers::Input({16});
  Tensor h = layers::Dense(32, {.activation = "relu", .name = "d1"})(x);
  h = layers::Dense(8, {.activation = "tanh", .name = "d2"})(h);
  return std::make_unique<Model>(x, layers::Dense(3, {.name = "d3"})(h));
}

// `model` compiled under `layout_map` (none: one device), after 8 steps of SGD.
std::vector<autograd::Variable> train(std::unique_ptr<Model> model, const Tree& data,
                                      const std::optional<dist::LayoutMap>& layout_map) {
  if (layout_map) dist::set_distribution(dist::ModelParallel(*layout_map, "batch"));
  model->compile({.optimizer = optimizers::SGD({.learning_rate = 0.05}),
                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  dist::set_distribution(nullptr);
  model->fit(data::Dataset::from_tensor_slices(data).batch(8), {.epochs = 2, .verbose = 0});
  return model->weights();
}

// How far mlp() trained under `layout_map` ends from mlp() trained on one device, after 8
// steps on the same 32 rows.
double mlp_difference_from_one_device(std::unique_ptr<Model> model, const dist::LayoutMap& layout_map) {
  Generator gen(2);
  const Tree data = Tree::list({uniform(Shape{32, 16}, gen, -1, 1), from_values<int32_t>(std::vector<int32_t>(32, 1), Shape{32})});
  const auto one = train(mlp(), data, std::nullopt);
  return max_relative_difference(train(std::move(model), data, layout_map), one);
}

TEST_F(SuggestLayoutMapTest, AnMlpGetsOneColumnRowPairAndTrainsAsOneDevice) {
  auto model = mlp();
  const dist::LayoutMap layout_map = suggest_layout_map(*model, mesh(2, 2));
  // d2 and d3 are not a pair: d2's 8 outputs feed d3, but d2 already closed d1's pair.
  EXPECT_EQ(layout_map.to_cpp(),
            "layout_map[\"d1/kernel\"] = {std::nullopt, \"model\"};\n"
            "layout_map[\"d1/bias\"] = {\"model\"};\n"
            "layout_map[\"d2/kernel\"] = {\"model\", std::nullopt};\n");
  EXPECT_LE(mlp_difference_from_one_device(std::move(model), layout_map), 1e-5);
}

TEST_F(SuggestLayoutMapTest, TheRestIsFullyShardedOverTheBatchAxisWhenAsked) {
  auto model = mlp();
  const dist::LayoutMap layout_map = suggest_layout_map(*model, mesh(2, 2), {.fully_shard_over = "batch"});
  // d2's bias (8,) and d3's kernel (8, 3) divide over the batch axis's 2; d3's bias (3,) does not.
  EXPECT_EQ(layout_map.to_cpp(),
            "layout_map[\"d1/kernel\"] = {std::nullopt, \"model\"};\n"
            "layout_map[\"d1/bias\"] = {\"model\"};\n"
            "layout_map[\"d2/kernel\"] = {\"model\", std::nullopt};\n"
            "layout_map[\"d2/bias\"] = {\"batch\"};\n"
            "layout_map[\"d3/kernel\"] = {\"batch\", std::nullopt};\n");
  EXPECT_LE(mlp_difference_from_one_device(std::move(model), layout_map), 1e-5);
  EXPECT_THAT([&] { suggest_layout_map(*mlp(), mesh(2, 2), {.fully_shard_over = "data"}); },
              ThrowsMessage<ValueError>("suggest_layout_map: the device mesh has no axis 'data' to fully shard over"));
}

TEST_F(SuggestLayoutMapTest, BertTinySplitsHeadsAndFeedforwardAndTrainsAsOneDevice) {
  BertBackboneConfig config = find_bert_preset("bert_tiny_en_uncased").config;
  config.dropout = 0.0;
  const Tree data = testing::mlm_batch(16, 7);  // 2 epochs of 2 steps
  const auto bert = [&] {
    layers::set_random_seed(11);
    auto model = std::make_unique<BertMaskedLM>(config);
    (*model)(data[0]);  // built
    return model;
  };
  auto model = bert();
  const dist::LayoutMap layout_map = suggest_layout_map(*model, mesh(2, 2));
  const std::string cpp = layout_map.to_cpp("layouts");
  for (int layer = 0; layer < 2; ++layer) {
    const std::string prefix = "layouts[\"transformer_layer_" + std::to_string(layer) + "/";
    EXPECT_THAT(cpp, HasSubstr(prefix + "self_attention_layer/query/kernel\"] = {std::nullopt, \"model\", std::nullopt};"));
    EXPECT_THAT(cpp, HasSubstr(prefix + "self_attention_layer/attention_output/kernel\"] = {\"model\", std::nullopt, std::nullopt};"));
    EXPECT_THAT(cpp, HasSubstr(prefix + "feedforward_intermediate_dense/kernel\"] = {std::nullopt, \"model\"};"));
    EXPECT_THAT(cpp, HasSubstr(prefix + "feedforward_output_dense/kernel\"] = {\"model\", std::nullopt};"));
  }
  EXPECT_THAT(cpp, HasSubstr("layouts[\"segment_embedding/embeddings\"] = {\"model\", std::nullopt};"));
  EXPECT_THAT(cpp, Not(HasSubstr("token_embedding")));  // tied to the output projection
  // 2 layers x (query, key, value: kernel and bias; attention_output; the feedforward pair's 3), the segment table.
  EXPECT_EQ(layout_map.entries().size(), 2U * 10 + 1);

  const auto one = train(bert(), data, std::nullopt);
  EXPECT_LE(max_relative_difference(train(std::move(model), data, layout_map), one), 3e-5);
}

TEST_F(SuggestLayoutMapTest, AMeshWithoutTheAxisAndAnUnbuiltModelAreRefused) {
  auto model = mlp();
  EXPECT_THAT([&] { suggest_layout_map(*model, mesh(2, 2), {.model_dim_name = "tensor"}); },
              ThrowsMessage<ValueError>("suggest_layout_map: the device mesh has no axis 'tensor' to split the model over"));
  Sequential unbuilt({layers::Dense(8), layers::Dense(3)}, "mlp");  // no input shape yet
  EXPECT_THAT([&] { suggest_layout_map(unbuilt, mesh(2, 2)); },
              ThrowsMessage<ValueError>("suggest_layout_map: model 'mlp' is not built; call it on a batch (or build it) "
                                        "first"));
}

}  // namespace
}  // namespace chorus::models
