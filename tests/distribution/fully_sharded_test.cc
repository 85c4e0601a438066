// Sharded data parallelism equals one device: ZeRO-1, ZeRO-2 and fully sharded data
// parallelism (DataParallel's Shard, ModelParallel's for the variables its LayoutMap
// leaves replicated, a layout naming the batch axis) train an MLP, the two-tower model
// and two Transformer encoder layers to one device's weights, optimizer state and
// metrics, and BERT-tiny to the mirrored replicas' bit for bit; the variables stay blocks of rows between steps; a checkpoint saved under FSDP
// resumes on one device and on a model axis; the per-device state is counted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/chorus.h"
#include "chorus/core/sharding.h"
#include "tests/distribute/two_tower_util.h"
#include "tests/distribution/mesh_models.h"
#include "tests/models/bert/mlm_batch.h"
#include "tests/testing/logical_devices.h"
#include "tests/testing/temp_dir.h"

namespace chorus {
namespace {

using namespace testing;  // the mesh models
using ::testing::ThrowsMessage;

using FullyShardedTest = LogicalDevicesTest<4, TempDirTest>;

std::shared_ptr<dist::DataParallel> data_parallel(int devices, dist::Shard shard) {
  return std::make_shared<dist::DataParallel>(mesh_devices(devices), dist::DataParallelOptions{.shard = shard});
}

const char* shard_name(dist::Shard shard) {
  switch (shard) {
    case dist::Shard::kNone: return "none";
    case dist::Shard::kOptimizerState: return "optimizer state";
    case dist::Shard::kGradients: return "gradients";
    case dist::Shard::kFull: return "full";
  }
  return "?";
}

// Weights, optimizer state (Adam's moments and step) and the metrics of every epoch.
void expect_same_training(const MeshRun& run, const MeshRun& reference) {
  EXPECT_LE(max_relative_difference(run.model->weights(), reference.model->weights()), 1e-5);
  EXPECT_LE(max_relative_difference(run.model->optimizer().variables(), reference.model->optimizer().variables()),
            1e-5);
  expect_same_history(run.history, reference.history);
}

TEST_F(FullyShardedTest, EveryShardOfDataParallelMatchesOneDevice) {
  const MeshRun reference = train_three_layer_mlp(nullptr);
  for (int devices : {2, 4}) {
    const MeshRun mirrored = train_three_layer_mlp(data_parallel(devices, dist::Shard::kNone));
    for (dist::Shard shard : {dist::Shard::kOptimizerState, dist::Shard::kGradients, dist::Shard::kFull}) {
      SCOPED_TRACE(::testing::Message() << devices << " devices, shard " << shard_name(shard));
      const MeshRun run = train_three_layer_mlp(data_parallel(devices, shard));
      expect_same_training(run, reference);
      // The sums over the devices go in the same order as the mirrored replicas' all-reduce.
      EXPECT_EQ(max_relative_difference(run.model->weights(), mirrored.model->weights()), 0.0);
    }
  }
}

TEST_F(FullyShardedTest, VariablesStayBlocksOfRowsBetweenSteps) {
  const MeshRun run = train_three_layer_mlp(data_parallel(4, dist::Shard::kFull));
  const auto weights = run.model->weights();
  ASSERT_EQ(weights[0].path(), "d1/kernel");
  ASSERT_EQ(weights[0].device_values().size(), 4U);
  const auto slots = run.model->optimizer().slots_of(weights[0]);
  LocalShardScope local;
  for (const autograd::Variable& v : {weights[0], slots[0]}) {
    const Tensor& block = v.device_values()[2];
    EXPECT_EQ(block.shape(), (Shape{4, 32})) << v.path();
    ASSERT_NE(block.impl()->sharding, nullptr) << v.path();
    EXPECT_EQ(block.impl()->sharding->dim, 0);
  }
  // d3's bias (3,) does not divide over 4 devices: whole on each, with whole state.
  EXPECT_EQ(weights[5].path(), "d3/bias");
  EXPECT_EQ(weights[5].device_values()[2].impl()->sharding, nullptr);
  EXPECT_EQ(dist::DataParallel(mesh_devices(4), {.shard = dist::Shard::kFull}).get_variable_layout(weights[0]).axes(),
            (std::vector<std::optional<std::string>>{"batch", std::nullopt}));
}

TEST_F(FullyShardedTest, FullyShardedTimesAModelAxisMatchesOneDevice) {
  const MeshRun reference = train_three_layer_mlp(nullptr);
  // d1 split by columns and d2 by rows over "model"; the rest fully sharded over "batch".
  const MeshRun by_default = train_three_layer_mlp(std::make_shared<dist::ModelParallel>(
      megatron_layouts(mesh(2, 2)), dist::ModelParallelOptions{.shard = dist::Shard::kFull}));
  expect_same_training(by_default, reference);
  // A layout that names the batch axis: d3's kernel fully sharded, the rest as before.
  dist::LayoutMap layouts = megatron_layouts(mesh(2, 2));
  layouts["d3/kernel"] = {"batch", std::nullopt};
  expect_same_training(train_three_layer_mlp(std::make_shared<dist::ModelParallel>(layouts)), reference);
}

TEST_F(FullyShardedTest, RowsFreeBatchPositionsAndClippingMatchOneDevice) {
  // Batches of three rows on four devices: the last batch position gets none in every
  // step (three of them in the last step, of one row); their devices run the step on the
  // batch's first row, weighed zero, with metrics nobody reads.
  const MeshRun reference = train_three_layer_mlp(nullptr, "sgd", false, /*batch_size=*/3);
  const MeshRun run = train_three_layer_mlp(data_parallel(4, dist::Shard::kFull), "sgd", false, /*batch_size=*/3);
  EXPECT_LE(max_relative_difference(run.model->weights(), reference.model->weights()), 1e-5);
  expect_same_history(run.history, reference.history);
  // Norms of blocks of rows add up over the batch axis (SGD's step follows the clipped gradient).
  for (bool global : {false, true}) {
    SCOPED_TRACE(global ? "global_clipnorm" : "clipnorm");
    const auto clipping = [&] {
      return global ? optimizers::SGD({.learning_rate = 0.5, .global_clipnorm = 0.05})
                    : optimizers::SGD({.learning_rate = 0.5, .clipnorm = 0.02});
    };
    const MeshRun clipped = train_three_layer_mlp(data_parallel(4, dist::Shard::kFull), clipping());
    EXPECT_LE(max_relative_difference(clipped.model->weights(),
                                      train_three_layer_mlp(nullptr, clipping()).model->weights()),
              1e-5);
  }
}

std::unique_ptr<TwoTower> train_two_tower(std::shared_ptr<dist::Distribution> distribution) {
  layers::set_random_seed(11);
  dist::set_distribution(std::move(distribution));
  auto model = std::make_unique<TwoTower>(32, 40, 8);
  model->compile({.optimizer = optimizers::Adagrad(0.2)});
  dist::set_distribution(nullptr);
  model->fit(two_tower_ratings(250, 32, 40).batch(64), {.epochs = 3, .verbose = 0});
  return model;
}

TEST_F(FullyShardedTest, TwoTowerAndTransformerMatchOneDevice) {
  auto two_tower = train_two_tower(nullptr);
  EXPECT_LE(max_relative_difference(train_two_tower(data_parallel(4, dist::Shard::kFull))->weights(),
                                    two_tower->weights()),
            1e-5);
  auto transformer = train_transformer(nullptr);
  // The tolerance of the model-parallel Transformer test (its key biases move by rounding).
  EXPECT_LE(max_relative_difference(train_transformer(data_parallel(2, dist::Shard::kFull))->weights(),
                                    transformer->weights()),
            3e-5);
  auto both = train_transformer(std::make_shared<dist::ModelParallel>(
      transformer_layouts(mesh(2, 2)), dist::ModelParallelOptions{.shard = dist::Shard::kFull}));
  EXPECT_LE(max_relative_difference(both->weights(), transformer->weights()), 3e-5);
}

// BERT-tiny's masked LM (the preset's shapes, dropout 0; the tied token table, 3.9 M of
// its 4.4 M parameters, split too), 10 steps of Adam: fully sharded on 2 devices, it ends
// where the mirrored replicas do, bit for bit, with the same metrics.
TEST_F(FullyShardedTest, BertTinyEqualsMirroredReplicasBitForBit) {
  models::BertBackboneConfig config = models::find_bert_preset("bert_tiny_en_uncased").config;
  config.dropout = 0.0;
  const Tree data = mlm_batch(40, 7);
  const auto train = [&](dist::Shard shard) {
    layers::set_random_seed(11);
    dist::set_distribution(data_parallel(2, shard));
    MeshRun run{std::make_unique<models::BertMaskedLM>(config), {}};
    run.model->compile({.optimizer = "adam",
                        .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                        .metrics = {"sparse_categorical_accuracy"}});
    dist::set_distribution(nullptr);
    run.history = run.model->fit(data::Dataset::from_tensor_slices(data).batch(8), {.epochs = 2, .verbose = 0});
    return run;
  };
  const MeshRun mirrored = train(dist::Shard::kNone), fully_sharded = train(dist::Shard::kFull);
  EXPECT_EQ(max_relative_difference(fully_sharded.model->weights(), mirrored.model->weights()), 0.0);
  EXPECT_EQ(max_relative_difference(fully_sharded.model->optimizer().variables(),
                                    mirrored.model->optimizer().variables()),
            0.0);
  expect_same_history(fully_sharded.history, mirrored.history);
}

// Under mixed_bfloat16 a layer reads its gathered float32 weights cast to bfloat16; the
// gradients reach the float32 whole values all the same.
TEST_F(FullyShardedTest, MixedBfloat16EqualsMirroredReplicasBitForBit) {
  mixed_precision::set_global_policy("mixed_bfloat16");
  const MeshRun mirrored = train_three_layer_mlp(data_parallel(2, dist::Shard::kNone));
  const MeshRun fully_sharded = train_three_layer_mlp(data_parallel(2, dist::Shard::kFull));
  mixed_precision::set_global_policy("float32");
  EXPECT_EQ(max_relative_difference(fully_sharded.model->weights(), mirrored.model->weights()), 0.0);
  expect_same_history(fully_sharded.history, mirrored.history);
  const MeshRun full_precision = train_three_layer_mlp(data_parallel(2, dist::Shard::kFull));
  EXPECT_GT(max_relative_difference(full_precision.model->weights(), mirrored.model->weights()), 1e-4);
}

TEST_F(FullyShardedTest, ACheckpointResumesOnOneDeviceAndOnAModelAxis) {
  const auto compile = [](models::Model& model) {
    model.compile({.optimizer = "adam", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  };
  layers::set_random_seed(5);
  auto uninterrupted = three_layer_mlp();
  compile(*uninterrupted);
  continue_training(*uninterrupted, 4);
  layers::set_random_seed(5);
  auto first_half = three_layer_mlp();
  {
    auto scope = data_parallel(4, dist::Shard::kFull)->scope();
    compile(*first_half);
  }
  continue_training(*first_half, 2);
  first_half->save(dir_ / "mlp");
  EXPECT_TRUE(std::filesystem::exists(dir_ / "mlp" / "model.safetensors.index.json"));
  auto on_one_device = models::load_model(dir_ / "mlp");
  continue_training(*on_one_device, 2);
  EXPECT_LE(max_relative_difference(on_one_device->weights(), uninterrupted->weights()), 1e-5);
  std::unique_ptr<models::Model> on_model_axis;
  {
    auto scope = dist::ModelParallel(megatron_layouts(mesh(1, 2))).scope();
    on_model_axis = models::load_model(dir_ / "mlp");
  }
  continue_training(*on_model_axis, 2);
  EXPECT_EQ(on_model_axis->optimizer().iterations(), 20);
  EXPECT_LE(max_relative_difference(on_model_axis->weights(), uninterrupted->weights()), 1e-5);
}

TEST_F(FullyShardedTest, EachDeviceHoldsAQuarterOfTheState) {
  const MeshRun run = train_three_layer_mlp(data_parallel(4, dist::Shard::kFull));
  const models::DeviceStatePlan plan = *models::device_state_plan(*run.model);
  // 835 parameters, of which d3's bias (3) does not divide over 4: 832 / 4 + 3 per device.
  EXPECT_EQ(plan.one_device.parameters, 835 * 4);
  EXPECT_EQ(plan.largest_device.parameters, (832 / 4 + 3) * 4);
  EXPECT_EQ(plan.largest_device.gradients, (832 / 4 + 3) * 4);
  EXPECT_EQ(plan.largest_device.optimizer, 2 * (832 / 4 + 3) * 4 + 8);  // Adam's moments, and its step
  const models::StateBytes counted = models::state_bytes(*run.model);
  EXPECT_EQ(counted.largest(), plan.largest_device.parameters + plan.largest_device.optimizer);
  EXPECT_EQ(counted.whole, plan.one_device.parameters + plan.one_device.optimizer);
  // ZeRO-2 keeps the reduced gradients of the rows a device updates; ZeRO-1 whole ones.
  const auto gradients = [](dist::Shard shard) {
    return models::device_state_plan(*train_three_layer_mlp(data_parallel(4, shard)).model)->largest_device.gradients;
  };
  EXPECT_EQ(gradients(dist::Shard::kOptimizerState), 835 * 4);
  EXPECT_EQ(gradients(dist::Shard::kGradients), (832 / 4 + 3) * 4);
}

TEST_F(FullyShardedTest, OnlyTrainableVariablesSplitOverTheBatchAxis) {
  dist::LayoutMap layouts(mesh(2, 1));
  layouts[".*moving_mean"] = {"batch"};
  dist::set_distribution(dist::ModelParallel(layouts));
  layers::Layer::reset_names();  // the next BatchNormalization is "batch_normalization"
  auto model = three_layer_mlp(16, 32, /*batch_norm=*/true);
  model->compile({.optimizer = "adam", .loss = "mse"});
  dist::set_distribution(nullptr);
  Generator gen(1);
  EXPECT_THAT([&] { model->fit(uniform(Shape{4, 16}, gen), uniform(Shape{4, 3}, gen), {.verbose = 0}); },
              ThrowsMessage<ValueError>(
                  "batch_normalization/moving_mean: layout ('batch',) shards the variable over the batch axis "
                  "'batch', but only trainable variables may be (fully sharded data parallelism gathers them for "
                  "each step)"));
}

}  // namespace
}  // namespace chorus
