// Fully sharded data parallelism across worker processes (issue 39): 2 workers × 2
// devices train as one process on one device does (weights, Adam's state, metrics,
// evaluation), whether the batch axis spans the job's 4 devices (each variable's rows
// split four ways, gathered over Gloo), each worker shards over its own 2 devices and the
// workers mirror each other (HSDP), or a (2, 2) mesh adds a model axis within each worker
// (FSDP × tensor parallelism). The spanning job saves its checkpoint in shards, which
// reload on one device.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chorus/chorus.h"
#include "tests/distribute/multi_worker_harness.h"
#include "tests/distribute/two_tower_util.h"

namespace chorus::testing {
namespace {

using nlohmann::json;
namespace dist = chorus::distribution;

enum class Layout {
  kSpanning,       // DataParallel over the job's 4 devices, Shard::kFull
  kEachWorker,     // DataParallel over each worker's 2 devices, Shard::kFull (the workers mirror)
  kWithModelAxis,  // ModelParallel on (2, 2) over the job's devices: batch lines span the
                   // workers, model lines stay in one; d1 and d2 Megatron's pair, the rest kFull
};

// Compiles `model` under `layout` when multi-worker, else on one device.
void compile_fully_sharded(ScenarioRun& run, models::Model& model, models::CompileOptions options, Layout layout) {
  if (!run.multi_worker()) {
    model.compile(std::move(options));
    return;
  }
  std::shared_ptr<dist::Distribution> distribution;
  switch (layout) {
    case Layout::kSpanning:
      distribution = std::make_shared<dist::DataParallel>(dist::list_devices(), dist::DataParallelOptions{.shard = dist::Shard::kFull});
      break;
    case Layout::kEachWorker:
      distribution = std::make_shared<dist::DataParallel>(std::vector<Device>{Device::cpu(0), Device::cpu(1)},
                                                          dist::DataParallelOptions{.shard = dist::Shard::kFull});
      break;
    case Layout::kWithModelAxis: {
      dist::LayoutMap layout_map(dist::DeviceMesh({2, 2}, {"batch", "model"}, dist::list_devices()));
      layout_map["d1/kernel"] = {std::nullopt, "model"};
      layout_map["d1/bias"] = {"model"};
      layout_map["d2/kernel"] = {"model", std::nullopt};
      distribution = std::make_shared<dist::ModelParallel>(layout_map, dist::ModelParallelOptions{.shard = dist::Shard::kFull});
      break;
    }
  }
  auto scope = dist::DistributionScope(distribution);
  model.compile(std::move(options));
}

// 21 steps with Adam, then evaluate and predict; the spanning job also saves and reloads.
json fit_fully_sharded_mlp_scenario(ScenarioRun& run, Layout layout) {
  layers::set_random_seed(7);
  Tensor x = layers::Input({4});
  Tensor h = layers::Dense(8, {.activation = "relu", .name = "d1"})(x);
  h = layers::Dense(8, {.activation = "relu", .name = "d2"})(h);
  models::Model model(x, layers::Dense(3, {.name = "d3"})(h));
  compile_fully_sharded(run, model, testing::mlp_compile_options(optimizers::Adam({.learning_rate = 0.01})), layout);
  auto train = testing::separable_blobs(98, 3), test = testing::separable_blobs(41, 9);
  models::History history = model.fit(train.x, train.y, {.epochs = 3, .batch_size = 16, .verbose = 0, .shuffle = false});
  json out = testing::outcome(model, history);
  for (const auto& [key, value] : model.evaluate(test.x, test.y, {.batch_size = 10, .verbose = 0})) {
    out["evaluate"][key] = value;
  }
  out["predict"] = model.predict(test.x, {.batch_size = 10}).tensor().to_vector<float>();
  if (layout == Layout::kSpanning) {
    const std::string path = testing::scratch_dir() + "/saved";
    model.save(path);
    out["reloaded_on_one_device"] = testing::variable_values(models::load_model(path)->weights());
    out["index_saved"] = std::filesystem::exists(path + "/model.safetensors.index.json") || !run.multi_worker();
    for (const autograd::Variable& v : model.weights()) {
      if (v.path() == "d1/kernel" && run.multi_worker()) out["d1_kernel_blocks_held"] = v.held_blocks();
    }
  }
  return out;
}

// Two Transformer encoder layers (SGD: see model_parallel_test.cc on the key bias).
json fit_fully_sharded_transformer_scenario(ScenarioRun& run) {
  layers::set_random_seed(9);
  Tensor x = layers::Input({6, 16});
  Tensor h = layers::TransformerEncoder(32, 4)(layers::TransformerEncoder(32, 4)(x));
  models::Model model(x, layers::Dense(4, {.name = "head"})(h));
  compile_fully_sharded(run, model, {.optimizer = optimizers::SGD({.learning_rate = 0.02}), .loss = "mse"},
                        Layout::kSpanning);
  Generator gen(4);
  models::History history = model.fit(uniform(Shape{80, 6, 16}, gen, -1, 1), uniform(Shape{80, 6, 4}, gen, -1, 1),
                                      {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  return testing::outcome(model, history);
}

[[maybe_unused]] const bool kFullyShardedScenariosRegistered = testing::register_scenarios({
    {"fully_sharded_mlp_spanning", [](ScenarioRun& run) { return fit_fully_sharded_mlp_scenario(run, Layout::kSpanning); }},
    {"fully_sharded_mlp_each_worker",
     [](ScenarioRun& run) { return fit_fully_sharded_mlp_scenario(run, Layout::kEachWorker); }},
    {"fully_sharded_mlp_with_model_axis",
     [](ScenarioRun& run) { return fit_fully_sharded_mlp_scenario(run, Layout::kWithModelAxis); }},
    {"fully_sharded_transformer", fit_fully_sharded_transformer_scenario},
});

TEST_F(MultiWorkerTest, FullyShardedOnTwoWorkersOfTwoDevicesMatchesOneDevice) {
  for (const char* scenario : {"fully_sharded_mlp_spanning", "fully_sharded_mlp_each_worker",
                               "fully_sharded_mlp_with_model_axis", "fully_sharded_transformer"}) {
    SCOPED_TRACE(scenario);
    const json reference = run_alone(scenario);
    ASSERT_EQ(run_job(scenario, 2, /*devices=*/2), (std::vector<int>{0, 0})) << error(0) << "\n" << error(1);
    expect_matches(reference, 2);
    if (std::string(scenario) != "fully_sharded_mlp_spanning") continue;
    // Each worker holds two of d1/kernel's four blocks of rows; the checkpoint is in
    // shards, and reloads on one device to the very weights.
    EXPECT_EQ(result(0)["d1_kernel_blocks_held"], json({true, true, false, false}));
    EXPECT_EQ(result(1)["d1_kernel_blocks_held"], json({false, false, true, true}));
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_EQ(result(rank)["index_saved"], true) << rank;
      EXPECT_EQ(result(rank)["reloaded_on_one_device"], result(rank)["weights"]) << rank;
    }
  }
}

}  // namespace
}  // namespace chorus::testing
