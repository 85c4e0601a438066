// ModelParallel equals one device: an MLP with Megatron column/row kernels and the
// two-tower model with row-sharded tables train to the weights of one device (relative
// difference <= 1e-5) on (1, 2), (1, 4) and (2, 2) meshes; per-device parameter and
// optimizer bytes fall with the shards; weights saved under a mesh load on one device;
// LayoutMap's lookup rules; and every layout error, before the first step.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "chorus/chorus.h"
#include "chorus/core/sharding.h"
#include "tests/distribute/two_tower_util.h"
#include "tests/distribution/mesh_models.h"
#include "tests/testing/logical_devices.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;
using namespace testing;  // the mesh models

using ModelParallelTest = testing::LogicalDevicesTest<8, testing::TempDirTest>;

TEST_F(ModelParallelTest, MegatronMlpMatchesOneDevice) {
  const MeshRun reference = train_three_layer_mlp(nullptr);
  for (auto [batch, model] : {std::pair{1, 2}, {1, 4}, {2, 2}, {2, 1}})
  for (auto [first, second] : {std::pair{"d1", "d2"}, {"d2", "d3"}}) {
    SCOPED_TRACE(::testing::Message() << "mesh (" << batch << ", " << model << "), " << first << " and " << second);
    const auto layouts = megatron_layouts(mesh(batch, model), first, second);
    const MeshRun run = train_three_layer_mlp(std::make_shared<dist::ModelParallel>(layouts, "batch"));
    EXPECT_LE(testing::max_relative_difference(run.model->weights(), reference.model->weights()), 1e-5);
    testing::expect_same_history(run.history, reference.history);
  }
}

TEST_F(ModelParallelTest, BatchPositionsWithoutRowsAddZeroGradients) {
  // Batches of one row on a (2, 2) mesh: one batch position gets no rows in every step,
  // and its devices take their blocks of zero gradients.
  const MeshRun reference = train_three_layer_mlp(nullptr, "sgd", false, /*batch_size=*/1);
  const MeshRun run = train_three_layer_mlp(std::make_shared<dist::ModelParallel>(megatron_layouts(mesh(2, 2))),
                                            "sgd", false, /*batch_size=*/1);
  EXPECT_LE(testing::max_relative_difference(run.model->weights(), reference.model->weights()), 1e-5);
}

TEST_F(ModelParallelTest, ClippedNormsAddUpOverTheShards) {
  // Limits well under the gradients' norms, so that every step clips; SGD's step is
  // proportional to the clipped gradient, so a norm taken over one block shows.
  const auto clipping = [](bool global) {
    return global ? optimizers::SGD({.learning_rate = 0.5, .global_clipnorm = 0.05})
                  : optimizers::SGD({.learning_rate = 0.5, .clipnorm = 0.02});
  };
  for (bool global : {false, true}) {
    SCOPED_TRACE(global ? "global_clipnorm" : "clipnorm");
    const MeshRun reference = train_three_layer_mlp(nullptr, clipping(global));
    const auto layouts = megatron_layouts(mesh(2, 2), "d2", "d3");
    const MeshRun run = train_three_layer_mlp(
        std::make_shared<dist::ModelParallel>(layouts, dist::ModelParallelOptions{.shard = dist::Shard::kOptimizerState}),
        clipping(global));
    EXPECT_LE(testing::max_relative_difference(run.model->weights(), reference.model->weights()), 1e-5);
  }
}

TEST_F(ModelParallelTest, BatchNormalizationNormalisesEachBatchPositionsRows) {
  // Without a split batch, one device's statistics; with one, DataParallel's (per-replica
  // statistics, moving averages the rows-weighted mean of the replicas').
  const MeshRun one_device = train_three_layer_mlp(nullptr, "adam", /*batch_norm=*/true);
  const MeshRun data_parallel =
      train_three_layer_mlp(std::make_shared<dist::DataParallel>(mesh_devices(2)), "adam", /*batch_norm=*/true);
  // Statistics over the wrong rows move the weights far (the two references differ by 1.8).
  EXPECT_GT(testing::max_relative_difference(data_parallel.model->weights(), one_device.model->weights()), 0.1);
  for (auto [batch, model] : {std::pair{1, 2}, {2, 2}}) {
    SCOPED_TRACE(::testing::Message() << "mesh (" << batch << ", " << model << ")");
    const MeshRun run = train_three_layer_mlp(std::make_shared<dist::ModelParallel>(megatron_layouts(mesh(batch, model))),
                                              "adam", /*batch_norm=*/true);
    const MeshRun& reference = batch == 1 ? one_device : data_parallel;
    // Normalising a batch position's 3 to 8 rows, then Adam, magnifies float32 rounding:
    // the row-split layer's halves add up in another order than one device's product, and
    // the (2, 2) mesh ends 1.8e-4 from DataParallel with oneDNN's AVX-512 kernels (under
    // 1e-5 with its AVX2 ones).
    EXPECT_LE(testing::max_relative_difference(run.model->weights(), reference.model->weights()), 1e-3);
  }
}

TEST_F(ModelParallelTest, KernelsStayShardedOnTheDevices) {
  const auto device_mesh = mesh(1, 4);
  const MeshRun run = train_three_layer_mlp(std::make_shared<dist::ModelParallel>(megatron_layouts(device_mesh)));
  const auto weights = run.model->weights();
  const autograd::Variable& kernel = weights[0];
  ASSERT_EQ(kernel.path(), "d1/kernel");
  ASSERT_TRUE(kernel.distributed());
  ASSERT_EQ(kernel.device_values().size(), 4U);
  LocalShardScope local;
  EXPECT_EQ(kernel.device_values()[2].shape(), (Shape{16, 8}));
  EXPECT_EQ(kernel.device_values()[2].impl()->sharding->dim, 1);
}

// Bytes of parameters and optimizer state on `device` (placed variables only).
int64_t bytes_on_device(const models::Model& model, int device) {
  LocalShardScope local;
  int64_t bytes = 0;
  std::vector<autograd::Variable> all = model.weights();
  for (const auto& v : model.optimizer().variables()) all.push_back(v);
  for (const auto& v : all) {
    bytes += static_cast<int64_t>(v.distributed() ? v.device_values()[static_cast<size_t>(device)].nbytes()
                                                  : v.value().nbytes());
  }
  return bytes;
}

TEST_F(ModelParallelTest, PerDeviceBytesFallWithTheShards) {
  const auto one_step = [](std::shared_ptr<dist::Distribution> distribution) {
    dist::set_distribution(std::move(distribution));
    Tensor x = layers::Input({64});
    Tensor h = layers::Dense(256, {.activation = "relu", .name = "d1"})(x);
    auto model = std::make_unique<models::Model>(x, layers::Dense(64, {.name = "d2"})(h));
    model->compile({.optimizer = "adam", .loss = "mse"});
    dist::set_distribution(nullptr);
    Generator gen(1);
    model->fit(uniform(Shape{8, 64}, gen), uniform(Shape{8, 64}, gen), {.batch_size = 8, .verbose = 0});
    return model;
  };
  auto single = one_step(nullptr);
  const auto device_mesh = mesh(1, 4);
  dist::LayoutMap layouts(device_mesh);
  layouts["d1/kernel"] = {std::nullopt, "model"};
  layouts["d1/bias"] = {"model"};
  layouts["d2/kernel"] = {"model", std::nullopt};
  auto sharded = one_step(std::make_shared<dist::ModelParallel>(layouts));
  const int64_t whole = bytes_on_device(*single, 0);
  for (int d = 0; d < 4; ++d) {
    EXPECT_LE(static_cast<double>(bytes_on_device(*sharded, d)), 0.3 * static_cast<double>(whole)) << "device " << d;
  }
}

// The summary's per-device lines come from the layouts; after a step they equal what the
// devices hold (state_bytes counts the placed tensors).
TEST_F(ModelParallelTest, SummaryPrintsEachDevicesShareOfTheState) {
  // The MLP 16-32-8-3: 835 float32 parameters (3,340 B); Megatron's d1/d2 pair on 4
  // devices leaves 512 / 4 + 32 / 4 + 256 / 4 + 8 + 24 + 3 = 235 (940 B) on each.
  MeshRun run = train_three_layer_mlp(std::make_shared<dist::ModelParallel>(megatron_layouts(mesh(1, 4))));
  const models::DeviceStatePlan plan = *models::device_state_plan(*run.model);
  EXPECT_EQ(plan.devices, 4);
  EXPECT_EQ(plan.one_device.parameters, 3340);
  EXPECT_EQ(plan.largest_device.parameters, 940);
  EXPECT_EQ(plan.largest_device.gradients, 940);
  EXPECT_EQ(plan.one_device.optimizer - plan.largest_device.optimizer, 2 * (3340 - 940));  // Adam's m and v
  EXPECT_EQ(models::state_bytes(*run.model).largest(), plan.largest_device.parameters + plan.largest_device.optimizer);
  std::ostringstream summary;
  run.model->summary(summary);
  EXPECT_THAT(summary.str(), HasSubstr(" Per device (the largest of 4): parameters 940.00 B, gradients 940.00 B, "
                                       "optimizer state "));
  EXPECT_THAT(summary.str(), HasSubstr(" On one device alone: parameters 3.26 KB, gradients 3.26 KB, "));
  // ZeRO-1 on (2, 2) also halves the slots of the replicated d2 bias (8) and d3 kernel (24),
  // whose first dimensions divide by the batch axis's 2; d3's bias (3) stays whole.
  const auto zero_plan = [](dist::Shard shard) {
    auto trained = train_three_layer_mlp(std::make_shared<dist::ModelParallel>(
        megatron_layouts(mesh(2, 2)), dist::ModelParallelOptions{.shard = shard}));
    const models::DeviceStatePlan p = *models::device_state_plan(*trained.model);
    EXPECT_EQ(models::state_bytes(*trained.model).largest(), p.largest_device.parameters + p.largest_device.optimizer);
    return p.largest_device.optimizer;
  };
  EXPECT_EQ(zero_plan(dist::Shard::kNone) - zero_plan(dist::Shard::kOptimizerState), 2 * (8 + 24) / 2 * 4);
  // Data parallelism keeps everything on every device; one device prints no such lines.
  const MeshRun replicas = train_three_layer_mlp(std::make_shared<dist::DataParallel>(mesh_devices(2)));
  const models::DeviceStatePlan data_plan = *models::device_state_plan(*replicas.model);
  EXPECT_EQ(data_plan.largest_device.parameters, data_plan.one_device.parameters);
  EXPECT_EQ(data_plan.largest_device.optimizer, data_plan.one_device.optimizer);
  const MeshRun single = train_three_layer_mlp(nullptr);
  EXPECT_FALSE(models::device_state_plan(*single.model).has_value());
}

TEST_F(ModelParallelTest, OptimizerStateSplitOverTheBatchAxisMatchesOneDevice) {
  const MeshRun reference = train_three_layer_mlp(nullptr);
  const auto layouts = megatron_layouts(mesh(2, 2), "d2", "d3");
  const MeshRun whole_state = train_three_layer_mlp(std::make_shared<dist::ModelParallel>(layouts));
  const MeshRun split_state = train_three_layer_mlp(
      std::make_shared<dist::ModelParallel>(layouts, dist::ModelParallelOptions{.shard = dist::Shard::kOptimizerState}));
  EXPECT_LE(testing::max_relative_difference(split_state.model->weights(), reference.model->weights()), 1e-5);
  // d1's kernel (16, 32) and bias (32,) keep half their two Adam slots on each device;
  // d3's bias (3,) does not divide over 2 and keeps whole ones.
  const int64_t saved = 2 * 4 * (16 * 32 + 32) / 2;
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(bytes_on_device(*split_state.model, d), bytes_on_device(*whole_state.model, d) - saved) << d;
  }
}

TEST_F(ModelParallelTest, PredictAndEvaluateMatchOneDevice) {
  const MeshRun reference = train_three_layer_mlp(nullptr);
  const auto device_mesh = mesh(2, 2);
  const MeshRun run = train_three_layer_mlp(std::make_shared<dist::ModelParallel>(megatron_layouts(device_mesh)));
  const LabelledRows data = labelled_rows(37);
  const Tensor want = reference.model->predict(data.x, {.batch_size = 16, .verbose = 0}).tensor();
  const Tensor got = run.model->predict(data.x, {.batch_size = 16, .verbose = 0}).tensor();
  EXPECT_TRUE(testing::tensors_near(got, want, 1e-5, 1e-5));
  const auto want_logs = reference.model->evaluate(data.x, data.y, {.batch_size = 16, .verbose = 0});
  const auto got_logs = run.model->evaluate(data.x, data.y, {.batch_size = 16, .verbose = 0});
  EXPECT_NEAR(got_logs.at("loss"), want_logs.at("loss"), 1e-5);
}

TEST_F(ModelParallelTest, WeightsSavedUnderAMeshLoadOnOneDevice) {
  const auto device_mesh = mesh(2, 2);
  const MeshRun run = train_three_layer_mlp(std::make_shared<dist::ModelParallel>(megatron_layouts(device_mesh)));
  const auto path = dir_ / "mlp.weights.safetensors";
  run.model->save_weights(path);
  auto restored = three_layer_mlp();
  restored->load_weights(path);
  EXPECT_EQ(testing::max_relative_difference(restored->weights(), run.model->weights()), 0.0);
}

TEST_F(ModelParallelTest, CheckpointsRestoreOnAnyLayout) {
  const auto compile = [](models::Model& model) {
    model.compile({.optimizer = "adam", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  };
  layers::set_random_seed(5);
  auto uninterrupted = three_layer_mlp();
  compile(*uninterrupted);
  continue_training(*uninterrupted, 4);
  // 10 steps on a (2, 2) mesh, saved whole; 10 more on one device, and on (1, 4).
  layers::set_random_seed(5);
  auto first_half = three_layer_mlp();
  {
    auto scope = dist::ModelParallel(megatron_layouts(mesh(2, 2), "d2", "d3")).scope();
    compile(*first_half);
  }
  continue_training(*first_half, 2);
  first_half->save(dir_ / "mlp");
  auto on_one_device = models::load_model(dir_ / "mlp");
  continue_training(*on_one_device, 2);
  EXPECT_LE(testing::max_relative_difference(on_one_device->weights(), uninterrupted->weights()), 1e-5);
  std::unique_ptr<models::Model> on_four;
  {
    auto scope = dist::ModelParallel(megatron_layouts(mesh(1, 4))).scope();
    on_four = models::load_model(dir_ / "mlp");
  }
  continue_training(*on_four, 2);
  EXPECT_EQ(on_four->optimizer().iterations(), 20);
  EXPECT_LE(testing::max_relative_difference(on_four->weights(), uninterrupted->weights()), 1e-5);
}

TEST_F(ModelParallelTest, OutputLayoutsRelayTheActivations) {
  const MeshRun reference = train_three_layer_mlp(nullptr);
  dist::LayoutMap layouts = megatron_layouts(mesh(2, 2));
  layouts["d2/output"] = {std::nullopt, "model"};  // d3 then reads a sharded input
  layouts["d3/output"] = {"batch", std::nullopt};  // the data layout: nothing to move
  const MeshRun run = train_three_layer_mlp(std::make_shared<dist::ModelParallel>(layouts));
  EXPECT_LE(testing::max_relative_difference(run.model->weights(), reference.model->weights()), 1e-5);
  layouts["d1/output"] = {"model"};
  EXPECT_THAT([&] { train_three_layer_mlp(std::make_shared<dist::ModelParallel>(layouts)); },
              ThrowsMessage<ValueError>(
                  "d1/output: layout ('model',) has 1 entries, but the output has shape (8, 32) of rank 2"));
}

TEST_F(ModelParallelTest, DeviceMemoryLimitCountsTheShards) {
  // Weights (64*256 + 256 + 256*64 + 64 floats) and Adam's two slots, plus iterations:
  // 3 * 4 * 33088 + 8 = 397064 bytes whole; about a quarter on each of 4 devices.
  ::setenv("CHORUS_DEVICE_MEMORY_LIMIT", "200000", 1);
  const auto fit_once = [](std::shared_ptr<dist::Distribution> distribution) {
    dist::set_distribution(std::move(distribution));
    Tensor x = layers::Input({64});
    Tensor h = layers::Dense(256, {.activation = "relu", .name = "d1"})(x);
    auto model = std::make_unique<models::Model>(x, layers::Dense(64, {.name = "d2"})(h), "budget");
    model->compile({.optimizer = "adam", .loss = "mse"});
    dist::set_distribution(nullptr);
    Generator gen(1);
    model->fit(uniform(Shape{8, 64}, gen), uniform(Shape{8, 64}, gen), {.batch_size = 8, .verbose = 0});
  };
  EXPECT_THAT([&] { fit_once(nullptr); },
              ThrowsMessage<ResourceExhaustedError>(
                  "budget: the weights and optimizer state need 397064 bytes on device 0 of 1, over its memory limit "
                  "of 200000 bytes (CHORUS_DEVICE_MEMORY_LIMIT); shard the largest variables with ModelParallel"));
  dist::LayoutMap layouts(mesh(1, 4));
  layouts["d1/kernel"] = {std::nullopt, "model"};
  layouts["d1/bias"] = {"model"};
  layouts["d2/kernel"] = {"model", std::nullopt};
  EXPECT_NO_THROW(fit_once(std::make_shared<dist::ModelParallel>(layouts)));
  ::setenv("CHORUS_DEVICE_MEMORY_LIMIT", "12X", 1);
  EXPECT_THAT([&] { fit_once(nullptr); },
              ThrowsMessage<ValueError>("CHORUS_DEVICE_MEMORY_LIMIT: expected a positive number of bytes, got '12X'"));
  ::unsetenv("CHORUS_DEVICE_MEMORY_LIMIT");
}

std::unique_ptr<testing::TwoTower> train_sharded_two_tower(std::shared_ptr<dist::Distribution> distribution) {
  layers::set_random_seed(11);
  dist::set_distribution(std::move(distribution));
  auto model = std::make_unique<testing::TwoTower>(32, 40, 8);
  model->compile({.optimizer = optimizers::Adagrad(0.2)});
  dist::set_distribution(nullptr);
  model->fit(testing::two_tower_ratings(250, 32, 40).batch(64), {.epochs = 3, .verbose = 0});
  return model;
}

TEST_F(ModelParallelTest, TwoTowerWithShardedTablesMatchesOneDevice) {
  auto reference = train_sharded_two_tower(nullptr);
  // Tables split by rows (a vocabulary over devices: gather, then all-reduce) and by
  // columns (each device looks up its columns).
  for (const auto& layout : {dist::TensorLayout{"model", std::nullopt}, dist::TensorLayout{std::nullopt, "model"}}) {
    for (auto [batch, model] : {std::pair{1, 2}, {1, 4}, {2, 2}}) {
      SCOPED_TRACE(::testing::Message() << "mesh (" << batch << ", " << model << ") rows " << layout.axes()[0].has_value());
      dist::LayoutMap layouts(mesh(batch, model));
      layouts[".*/embeddings"] = layout;
      auto trained = train_sharded_two_tower(std::make_shared<dist::ModelParallel>(layouts));
      EXPECT_LE(testing::max_relative_difference(trained->weights(), reference->weights()), 1e-5);
    }
  }
}

TEST_F(ModelParallelTest, TransformerWithHeadsSplitMatchesOneDevice) {
  auto reference = train_transformer(nullptr);
  for (auto [batch, model] : {std::pair{1, 2}, {1, 4}, {2, 2}}) {
    SCOPED_TRACE(::testing::Message() << "mesh (" << batch << ", " << model << ")");
    auto trained = train_transformer(std::make_shared<dist::ModelParallel>(transformer_layouts(mesh(batch, model))));
    const auto weights = trained->weights();
    const auto sharded = [](const autograd::Variable& v) {
      return v.distributed() && v.device_values()[0].impl()->sharding != nullptr;
    };
    // Per layer: query, key and value kernels and biases, attention_output's kernel, and
    // the feedforward's two kernels and first bias.
    EXPECT_EQ(std::count_if(weights.begin(), weights.end(), sharded), 2 * 10);
    // The key biases move by rounding alone (see train_transformer): 1.01e-5 in the
    // sanitizer build with oneDNN's AVX-512 kernels.
    EXPECT_LE(testing::max_relative_difference(trained->weights(), reference->weights()), 3e-5);
  }
}

TEST_F(ModelParallelTest, LayoutMapTakesAnExactKeyThenTheOneFullMatch) {
  dist::LayoutMap layouts(mesh(2, 4));
  layouts["d1/kernel"] = {std::nullopt, "model"};
  layouts["d.*/kernel"] = {"model", std::nullopt};
  layouts["d2/bias"] = {"model"};
  EXPECT_EQ(layouts.get("d1/kernel")->axes()[1], "model");  // exact key first
  EXPECT_EQ(layouts.get("d3/kernel")->axes()[0], "model");  // then the regular expression
  EXPECT_FALSE(layouts.get("d2/bias_extra").has_value());   // the whole path must match
  EXPECT_FALSE(layouts.get("x/d3/kernel").has_value());
  layouts[".*3/kernel"] = {std::nullopt, std::nullopt};
  EXPECT_THAT([&] { layouts.get("d3/kernel"); },
              ThrowsMessage<ValueError>(
                  "LayoutMap: 'd3/kernel' matches more than one key: 'd.*/kernel' and '.*3/kernel'; each path may "
                  "match one"));
  layouts["(unclosed"] = {};
  EXPECT_THAT([&] { layouts.get("d9/kernel"); },
              ThrowsMessage<ValueError>(HasSubstr("LayoutMap: key '(unclosed' is not a valid regular expression")));
}

// The error that compiling and fitting the MLP under `layouts` on `device_mesh` gives.
void expect_layout_error(const dist::LayoutMap& layouts, const std::string& message) {
  auto model = three_layer_mlp(784, 250);
  dist::set_distribution(dist::ModelParallel(layouts, "batch"));
  model->compile({.optimizer = "adam", .loss = "mse"});
  dist::set_distribution(nullptr);
  Generator gen(1);
  const auto variables_before = model->weights();
  EXPECT_THAT([&] { model->fit(uniform(Shape{4, 784}, gen), uniform(Shape{4, 3}, gen), {.verbose = 0}); },
              ThrowsMessage<ValueError>(message));
  EXPECT_EQ(model->optimizer().iterations(), 0);  // before the first step
}

TEST_F(ModelParallelTest, LayoutErrorsComeBeforeTheFirstStep) {
  const auto device_mesh = mesh(2, 4);
  dist::LayoutMap indivisible(device_mesh);
  indivisible["d1/kernel"] = {std::nullopt, "model"};
  expect_layout_error(indivisible, "d1/kernel: dimension 1 of shape (784, 250) does not divide over mesh axis 'model' of size 4");
  dist::LayoutMap unknown(device_mesh);
  unknown["d1/bias"] = {"modle"};
  expect_layout_error(unknown,
                   "d1/bias: layout ('modle',) names mesh axis 'modle', which is not an axis of the mesh ('batch', "
                   "'model')");
  dist::LayoutMap rank(device_mesh);
  rank["d2/kernel"] = {"model"};
  expect_layout_error(rank, "d2/kernel: layout ('model',) has 1 entries, but the variable has shape (250, 8) of rank 2");
  dist::LayoutMap two(device_mesh);
  two[".*/kernel"] = {};
  two["d1/.*"] = {};
  expect_layout_error(two, "LayoutMap: 'd1/kernel' matches more than one key: '.*/kernel' and 'd1/.*'; each path may match one");
  dist::LayoutMap batch(device_mesh);
  batch["d2/kernel"] = {std::nullopt, "batch"};
  expect_layout_error(batch, "d2/kernel: layout (None, 'batch') splits dimension 1 over the batch axis 'batch'; only "
                             "the first may be");
}

TEST_F(ModelParallelTest, ALayoutKeyThatMatchesNothingIsNamedWithTheNearestPaths) {
  dist::LayoutMap layouts(mesh(2, 4));
  layouts["d1/kernel"] = {std::nullopt, "model"};  // not 'dense_1': the layers are named
  layouts["d2/output"] = {"batch", std::nullopt};   // a layer's output is a key too
  layouts["d.*/bias"] = {std::nullopt};
  layouts["d4/kernel"] = {"model", std::nullopt};  // a layer the model does not have
  layouts[".*/kernal"] = {};
  EXPECT_EQ(layouts.unmatched_keys(std::vector<std::string>{"d1/kernel", "d2/output", "d3/bias"}),
            (std::vector<std::string>{"d4/kernel", ".*/kernal"}));
  expect_layout_error(layouts,
                      "LayoutMap: key 'd4/kernel' matches no variable and no layer output of the model; the nearest "
                      "variable paths: 'd1/kernel', 'd2/kernel', 'd3/kernel' (ModelParallelOptions::"
                      "ignore_unmatched_layout_keys ignores such keys, as Keras does)");
  // Keras's leniency, asked for: the keys that match lay the model out, the others do nothing.
  auto run = train_three_layer_mlp(std::make_shared<dist::ModelParallel>(
      layouts, dist::ModelParallelOptions{.batch_dim_name = "batch", .ignore_unmatched_layout_keys = true}));
  const autograd::Variable kernel = run.model->weights()[0];
  ASSERT_EQ(kernel.path(), "d1/kernel");
  EXPECT_TRUE(kernel.distributed() && kernel.device_values()[0].impl()->sharding != nullptr);
}

// A layer that reads its kernel's elements itself, as no op with a sharding rule would.
class RawReader : public layers::Layer {
 public:
  RawReader() : Layer("RawReader", "raw") {}
  void build(const Tree&) override { kernel_ = add_weight("kernel", Shape{4, 8}, "ones"); }
  Tree call(const Tree& inputs, bool) override {
    (void)kernel_.value().data<float>()[0];
    return inputs;
  }
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<RawReader>(std::move(*this)); }

 private:
  autograd::Variable kernel_;
};

TEST_F(ModelParallelTest, ReadingABlockOutsideTheRulesIsAnError) {
  dist::LayoutMap layouts(mesh(1, 2));
  layouts["raw/kernel"] = {std::nullopt, "model"};
  dist::set_distribution(dist::ModelParallel(layouts));
  Tensor x = layers::Input({4});
  models::Model model(x, RawReader()(x));
  model.compile({.optimizer = "sgd", .loss = "mse"});
  dist::set_distribution(nullptr);
  Generator gen(1);
  EXPECT_THAT([&] { model.predict(uniform(Shape{2, 4}, gen), {.verbose = 0}); },
              ThrowsMessage<Error>("Tensor: the data of a tensor of shape (4, 8) sharded along dimension 1 over mesh "
                                   "axis 'model' was read by code that has no sharding rule; only its block of shape "
                                   "(4, 4) is here (ops::sharded::replicate gathers it)"));
}

TEST_F(ModelParallelTest, MeshAndBatchAxisAreChecked) {
  EXPECT_THAT([] { dist::DeviceMesh({2, 4}, {"batch", "model"}, mesh_devices(4)); },
              ThrowsMessage<ValueError>("DeviceMesh: shape (2, 4) needs 8 devices, got 4"));
  EXPECT_THAT([] { dist::ModelParallel(dist::LayoutMap(mesh(2, 2)), "data"); },
              ThrowsMessage<ValueError>("ModelParallel: batch_dim_name 'data' is not an axis of the device mesh "
                                        "('batch', 'model')"));
}

}  // namespace
}  // namespace chorus
