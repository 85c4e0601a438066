// ModelParallel across worker processes (issue 21). Either each worker splits the model
// over a (1, 2) mesh of its own devices and the batch axis continues across the workers,
// so 2 workers × 2 devices train as a (2, 2) mesh; or the mesh holds all 4 devices of the
// job (distribution::list_devices()) and its model axis spans the workers. Either way the
// MLP (with evaluate and predict), the two-tower model and a 2-layer Transformer encoder
// end where one process on one device does. Workers whose layouts differ fail the
// start-up check; a mesh over some but not all of the job's devices is refused.
#include <signal.h>
#include <sys/resource.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chorus/chorus.h"
#include "tests/distribute/multi_worker_harness.h"
#include "tests/distribute/two_tower_util.h"
#include "tests/models/model_test_util.h"
#include "tests/testing/test_names.h"

namespace chorus::testing {
namespace {

using namespace testing::test_names;
using nlohmann::json;

// The meshes a multi-worker scenario runs on (2 workers × 2 devices).
enum class Mesh {
  kEachWorker,    // (1, 2) over each worker's own devices: the batch axis goes on across workers
  kSpanning,      // (1, 4) over the job's devices: the model axis spans both workers
  kCrossedModel,  // (2, 2) over cpu:0, cpu:2, cpu:1, cpu:3: each model line spans both workers,
                  // each batch line is one worker's
};

distribution::DeviceMesh mesh_of(Mesh mesh) {
  switch (mesh) {
    case Mesh::kEachWorker:
      return distribution::DeviceMesh({1, 2}, {"batch", "model"}, {Device::cpu(0), Device::cpu(1)});
    case Mesh::kSpanning:
      return distribution::DeviceMesh({1, 4}, {"batch", "model"}, distribution::list_devices());
    case Mesh::kCrossedModel:
      return distribution::DeviceMesh({2, 2}, {"batch", "model"},
                                      {Device::cpu(0), Device::cpu(2), Device::cpu(1), Device::cpu(3)});
  }
  throw std::logic_error("mesh_of: unknown mesh");
}

// Compiles `model` under ModelParallel with `layouts` over `mesh` when multi-worker, else
// on one device.
void compile_sharded(ScenarioRun& run, models::Model& model, models::CompileOptions options,
                     const std::vector<std::pair<std::string, distribution::TensorLayout>>& layouts,
                     Mesh mesh = Mesh::kEachWorker) {
  if (!run.multi_worker()) {
    model.compile(std::move(options));
    return;
  }
  distribution::LayoutMap layout_map(mesh_of(mesh));
  for (const auto& [key, layout] : layouts) layout_map[key] = layout;
  auto scope = distribution::ModelParallel(layout_map).scope();
  model.compile(std::move(options));
}

// The MLP with its hidden layers split Megatron-style over the model axis when multi-worker
// ("mismatch": rank 1 splits d2 by columns instead), on one device when alone.
json fit_sharded_mlp_scenario(ScenarioRun& run, bool mismatch, Mesh mesh = Mesh::kEachWorker) {
  layers::set_random_seed(7);
  Tensor x = layers::Input({4});
  Tensor h = layers::Dense(8, {.activation = "relu", .name = "d1"})(x);
  h = layers::Dense(8, {.activation = "relu", .name = "d2"})(h);
  models::Model model(x, layers::Dense(3, {.name = "d3"})(h));
  const distribution::TensorLayout d2 = mismatch && run.rank() == 1 ? distribution::TensorLayout{std::nullopt, "model"}
                                                                      : distribution::TensorLayout{"model", std::nullopt};
  const std::vector<std::pair<std::string, distribution::TensorLayout>> layouts{
      {"d1/kernel", {std::nullopt, "model"}}, {"d1/bias", {"model"}}, {"d2/kernel", d2}};
  const auto options = testing::mlp_compile_options(optimizers::Adam({.learning_rate = 0.01}));
  compile_sharded(run, model, options, layouts, mesh);
  auto train = testing::separable_blobs(98, 3), test = testing::separable_blobs(41, 9);
  models::History history = model.fit(train.x, train.y, {.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false});
  // Compiled again (the variables gathered whole, then placed anew), the same optimizer goes on.
  compile_sharded(run, model, options, layouts, mesh);
  model.fit(train.x, train.y, {.epochs = 1, .batch_size = 16, .verbose = 0, .shuffle = false});
  json out = testing::outcome(model, history);
  for (const auto& [key, value] : model.evaluate(test.x, test.y, {.batch_size = 10, .verbose = 0})) {
    out["evaluate"][key] = value;
  }
  out["predict"] = model.predict(test.x, {.batch_size = 10}).tensor().to_vector<float>();
  // Which blocks of d1/kernel this worker's devices hold (sharded, not copied, across workers).
  for (const autograd::Variable& v : model.weights()) {
    if (v.path() != "d1/kernel" || !run.multi_worker()) continue;
    out["d1_kernel_blocks_held"] = v.held_blocks();
    try {
      (void)v.value();  // whole only where every block is held here
    } catch (const ValueError& e) {
      out["d1_kernel_value_error"] = e.what();
    }
  }
  return out;
}

// Checkpoints in shards (issue 39): the MLP trained on the spanning mesh is saved (two
// shard files, one per worker), read back on one device, and read into another model on
// the same mesh, each worker copying only its blocks, which then trains on as the saved
// one does.
std::unique_ptr<models::Model> mlp() {
  Tensor x = layers::Input({4});
  Tensor h = layers::Dense(8, {.activation = "relu", .name = "d1"})(x);
  h = layers::Dense(8, {.activation = "relu", .name = "d2"})(h);
  return std::make_unique<models::Model>(x, layers::Dense(3, {.name = "d3"})(h));
}

// mlp()'s Megatron pair.
const std::vector<std::pair<std::string, distribution::TensorLayout>> kMlpLayouts{
    {"d1/kernel", {std::nullopt, "model"}}, {"d1/bias", {"model"}}, {"d2/kernel", {"model", std::nullopt}}};

json save_and_reload_spanning_mlp_scenario(ScenarioRun& run) {
  const auto& layouts = kMlpLayouts;
  const auto options = [] { return testing::mlp_compile_options(optimizers::Adam({.learning_rate = 0.01})); };
  const auto train = testing::separable_blobs(64, 3);
  const models::FitOptions epoch{.epochs = 1, .batch_size = 16, .verbose = 0, .shuffle = false};
  layers::set_random_seed(7);
  auto saved = mlp();
  compile_sharded(run, *saved, options(), layouts, Mesh::kSpanning);
  saved->fit(train.x, train.y, epoch);
  const std::string path = testing::scratch_dir() + "/saved";
  saved->save(path);
  json out;
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    out["saved_files"].push_back(entry.path().filename().string());
  }
  std::sort(out["saved_files"].begin(), out["saved_files"].end());
  out["reloaded_on_one_device"] = testing::variable_values(models::load_model(path)->weights());
  saved->fit(train.x, train.y, epoch);
  out["uninterrupted"] = testing::outcome(*saved, models::History())["weights"];

  layers::set_random_seed(8);  // other initial weights, which the load replaces
  auto reloaded = mlp();
  compile_sharded(run, *reloaded, options(), layouts, Mesh::kSpanning);
  reloaded->fit(train.x, train.y, epoch);  // the variables placed on the mesh, then loaded
  reloaded->load_weights(path);
  reloaded->load_optimizer_state(path);
  models::History history = reloaded->fit(train.x, train.y, epoch);
  out.update(testing::outcome(*reloaded, history));
  return out;
}

// Shards written by one process on a (2, 2) mesh (the test, before the job), loaded by 2
// workers whose model is placed on a mesh spanning them: the weights the process saved.
json load_one_process_shards_scenario(ScenarioRun& run) {
  layers::set_random_seed(8);
  auto model = mlp();
  compile_sharded(run, *model, testing::mlp_compile_options(optimizers::SGD({.learning_rate = 0.1})), kMlpLayouts,
                  Mesh::kSpanning);
  const auto train = testing::separable_blobs(32, 3);
  model->fit(train.x, train.y, {.batch_size = 16, .verbose = 0});  // placed on the mesh
  model->load_weights(testing::scratch_dir() + "/one_process");
  return testing::outcome(*model, models::History());
}

// A sharded save that fails on one rank: rank 1 may write no file larger than 64 bytes
// (RLIMIT_FSIZE, so its shard's header fails with EFBIG), after a save that succeeded.
// Every rank throws — rank 1 its own error, rank 0 naming rank 1 — and the checkpoint at
// the path is the earlier one, with no staging directory left beside it.
json failed_save_scenario(ScenarioRun& run) {
  layers::set_random_seed(7);
  Tensor x = layers::Input({4});
  models::Model model(x, layers::Dense(3, {.name = "d3"})(layers::Dense(8, {.name = "d1"})(x)));
  compile_sharded(run, model, testing::mlp_compile_options(optimizers::SGD({.learning_rate = 0.1})),
                  {{"d1/kernel", {std::nullopt, "model"}}}, Mesh::kSpanning);
  const auto train = testing::separable_blobs(32, 3);
  model.fit(train.x, train.y, {.batch_size = 16, .verbose = 0});
  const std::string path = testing::scratch_dir() + "/saved";
  model.save(path);
  json out;
  out["saved"] = testing::variable_values(models::load_model(path)->weights());
  model.fit(train.x, train.y, {.batch_size = 16, .verbose = 0});  // other weights to save
  rlimit unlimited{};
  ::getrlimit(RLIMIT_FSIZE, &unlimited);
  if (run.rank() == 1) {
    ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead of killing
    rlimit small = unlimited;
    small.rlim_cur = 64;
    ::setrlimit(RLIMIT_FSIZE, &small);
  }
  try {
    model.save(path);
  } catch (const IOError& e) {
    out["save_error"] = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &unlimited);
  out["after_failure"] = testing::variable_values(models::load_model(path)->weights());
  for (const auto& entry : std::filesystem::directory_iterator(testing::scratch_dir())) {
    if (entry.path().filename().string().rfind("saved.", 0) == 0) out["left_beside"].push_back(entry.path().string());
  }
  return out;
}

// An MLP with BatchNormalization, whose statistics are each batch position's: multi-worker
// on (1, 2) meshes, alone with DataParallel over 2 devices (the same rows per replica).
json fit_batch_norm_scenario(ScenarioRun& run) {
  layers::set_random_seed(3);
  Tensor x = layers::Input({4});
  Tensor h = layers::Dense(8, {.activation = "relu", .name = "d1"})(x);
  h = layers::BatchNormalization()(h);
  models::Model model(x, layers::Dense(3, {.name = "d2"})(h));
  const auto options = testing::mlp_compile_options(optimizers::SGD({.learning_rate = 0.1}));
  if (run.multi_worker()) {
    compile_sharded(run, model, options, {{"d1/kernel", {std::nullopt, "model"}}, {"d1/bias", {"model"}}});
  } else {
    chorus::set_cpu_devices(2);
    auto scope = distribution::DataParallel(std::vector<Device>{Device::cpu(0), Device::cpu(1)}).scope();
    model.compile(options);
  }
  auto train = testing::separable_blobs(96, 3);
  models::History history = model.fit(train.x, train.y, {.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false});
  json out = testing::outcome(model, history);
  out["world_size"] = run.world_size();  // alone: one process, though over 2 replicas
  if (!run.multi_worker()) chorus::set_cpu_devices(0);
  return out;
}

// The two-tower model with both tables split by rows.
json fit_sharded_two_tower_scenario(ScenarioRun& run, Mesh mesh = Mesh::kEachWorker) {
  layers::set_random_seed(11);
  testing::TwoTower model(32, 40, 8);
  compile_sharded(run, model, {.optimizer = optimizers::Adagrad(0.2)}, {{".*/embeddings", {"model", std::nullopt}}},
                  mesh);
  models::History history = model.fit(testing::two_tower_ratings(250, 32, 40).batch(64), {.epochs = 3, .verbose = 0});
  return testing::outcome(model, history);
}

// Two Transformer encoder layers with heads and feedforward blocks split (SGD: see
// model_parallel_test.cc on the key bias).
json fit_sharded_transformer_scenario(ScenarioRun& run, Mesh mesh = Mesh::kEachWorker) {
  layers::set_random_seed(9);
  Tensor x = layers::Input({6, 16});
  Tensor h = layers::TransformerEncoder(32, 4)(layers::TransformerEncoder(32, 4)(x));
  models::Model model(x, layers::Dense(4, {.name = "head"})(h));
  compile_sharded(run, model, {.optimizer = optimizers::SGD({.learning_rate = 0.02}), .loss = "mse"},
                  {{".*/(query|key|value)/kernel", {std::nullopt, "model", std::nullopt}},
                   {".*/(query|key|value)/bias", {"model", std::nullopt}},
                   {".*/attention_output/kernel", {"model", std::nullopt, std::nullopt}},
                   {".*/feedforward_intermediate_dense/kernel", {std::nullopt, "model"}},
                   {".*/feedforward_intermediate_dense/bias", {"model"}},
                   {".*/feedforward_output_dense/kernel", {"model", std::nullopt}}},
                  mesh);
  Generator gen(4);
  models::History history = model.fit(uniform(Shape{80, 6, 16}, gen, -1, 1), uniform(Shape{80, 6, 4}, gen, -1, 1),
                                      {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  return testing::outcome(model, history);
}

// What the job's device list and the meshes over some of its devices give: the error
// messages, by case.
json mesh_errors_scenario(ScenarioRun& /*run*/) {
  json out;
  for (const Device& d : distribution::list_devices()) out["devices"].push_back(d.to_string());
  const auto message = [](const std::function<void()>& make) {
    try {
      make();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto model_parallel = [](std::vector<int64_t> shape, std::vector<Device> devices) {
    distribution::LayoutMap layout_map(distribution::DeviceMesh(std::move(shape), {"batch", "model"}, std::move(devices)));
    (void)distribution::ModelParallel(layout_map);
  };
  out["some_of_the_job"] = message([&] { model_parallel({1, 3}, {Device::cpu(0), Device::cpu(1), Device::cpu(2)}); });
  out["another_workers"] = message([&] { model_parallel({1, 2}, {Device::cpu(2), Device::cpu(3)}); });
  out["beyond_the_job"] = message([&] { model_parallel({1, 2}, {Device::cpu(0), Device::cpu(4)}); });
  out["data_parallel_order"] = message([] {
    distribution::DataParallel({Device::cpu(2), Device::cpu(3), Device::cpu(0), Device::cpu(1)});
  });
  out["data_parallel_replicas"] = distribution::DataParallel(distribution::list_devices()).num_replicas();
  return out;
}

[[maybe_unused]] const bool kModelParallelScenariosRegistered = testing::register_scenarios({
    {"sharded_mlp", [](ScenarioRun& run) { return fit_sharded_mlp_scenario(run, false); }},
    {"spanning_mlp", [](ScenarioRun& run) { return fit_sharded_mlp_scenario(run, false, Mesh::kSpanning); }},
    {"crossed_mlp", [](ScenarioRun& run) { return fit_sharded_mlp_scenario(run, false, Mesh::kCrossedModel); }},
    {"spanning_two_tower", [](ScenarioRun& run) { return fit_sharded_two_tower_scenario(run, Mesh::kSpanning); }},
    {"crossed_transformer",
     [](ScenarioRun& run) { return fit_sharded_transformer_scenario(run, Mesh::kCrossedModel); }},
    {"mesh_errors", mesh_errors_scenario},
    {"spanning_mlp_save_and_reload", save_and_reload_spanning_mlp_scenario},
    {"failed_sharded_save", failed_save_scenario},
    {"load_one_process_shards", load_one_process_shards_scenario},
    {"sharded_mlp_mismatch", [](ScenarioRun& run) { return fit_sharded_mlp_scenario(run, true); }},
    {"sharded_two_tower", [](ScenarioRun& run) { return fit_sharded_two_tower_scenario(run); }},
    {"sharded_batch_norm", fit_batch_norm_scenario},
    {"sharded_transformer", [](ScenarioRun& run) { return fit_sharded_transformer_scenario(run); }},
});

TEST_F(MultiWorkerTest, ModelParallelOnTwoWorkersOfTwoDevicesMatchesOneDevice) {
  for (const char* scenario : {"sharded_mlp", "sharded_two_tower", "sharded_transformer", "sharded_batch_norm"}) {
    SCOPED_TRACE(scenario);
    const json reference = run_alone(scenario);
    EXPECT_EQ(run_job(scenario, 2, /*devices=*/2), (std::vector<int>{0, 0}));
    expect_matches(reference, 2);
  }
}

TEST_F(MultiWorkerTest, ModelParallelOnAMeshSpanningTwoWorkersMatchesOneDevice) {
  for (const char* scenario : {"spanning_mlp", "crossed_mlp", "spanning_two_tower", "crossed_transformer"}) {
    SCOPED_TRACE(scenario);
    const json reference = run_alone(scenario);
    ASSERT_EQ(run_job(scenario, 2, /*devices=*/2), (std::vector<int>{0, 0})) << error(0) << "\n" << error(1);
    expect_matches(reference, 2);
    // Sharded, not copied, across the workers: (1, 4) leaves each two of d1/kernel's four
    // blocks, the crossed (2, 2) one of two.
    if (std::string(scenario) == "spanning_mlp") {
      EXPECT_EQ(result(0)["d1_kernel_blocks_held"], json({true, true, false, false}));
      EXPECT_EQ(result(1)["d1_kernel_blocks_held"], json({false, false, true, true}));
      EXPECT_EQ(result(0)["d1_kernel_value_error"],
                "Variable 'd1/kernel': block 2 of its 4 along dimension 1 is on another worker's device; "
                "models::whole_values gathers the whole value over the job (every worker calls it)");
    } else if (std::string(scenario) == "crossed_mlp") {
      EXPECT_EQ(result(0)["d1_kernel_blocks_held"], json({true, false}));
      EXPECT_EQ(result(1)["d1_kernel_blocks_held"], json({false, true}));
    }
  }
}

TEST_F(MultiWorkerTest, ACheckpointSavedOnASpanningMeshIsInShardsThatReloadAnywhere) {
  const json reference = run_alone("spanning_mlp_save_and_reload");
  ASSERT_EQ(run_job("spanning_mlp_save_and_reload", 2, /*devices=*/2), (std::vector<int>{0, 0}))
      << error(0) << "\n" << error(1);
  expect_matches(reference, 2);
  // One process on one device splits nothing and writes the whole files; two workers write
  // a shard each of the weights and of the optimizer state.
  EXPECT_EQ(reference["saved_files"],
            json({"config.json", "model.weights.safetensors", "optimizer.safetensors", "state.json"}));
  EXPECT_EQ(result(0)["saved_files"],
            json({"config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                  "model.safetensors.index.json", "optimizer-00001-of-00002.safetensors",
                  "optimizer-00002-of-00002.safetensors", "optimizer.safetensors.index.json", "state.json"}));
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(rank);
    EXPECT_LE(worst_relative_difference(reference["reloaded_on_one_device"], result(rank)["reloaded_on_one_device"],
                                        "reloaded on one device"),
              1e-5);
    // The model that loaded the shards trained on exactly as the saved one did.
    EXPECT_EQ(result(rank)["weights"], result(rank)["uninterrupted"]);
  }
}

TEST_F(MultiWorkerTest, ShardsOneProcessWroteOnFourDevicesLoadOnTwoWorkers) {
  chorus::set_cpu_devices(4);
  layers::set_random_seed(5);
  auto model = mlp();
  distribution::LayoutMap layout_map(distribution::DeviceMesh(
      {2, 2}, {"batch", "model"}, {Device::cpu(0), Device::cpu(1), Device::cpu(2), Device::cpu(3)}));
  for (const auto& [key, layout] : kMlpLayouts) layout_map[key] = layout;
  {
    auto scope = distribution::ModelParallel(layout_map, "batch").scope();
    model->compile(testing::mlp_compile_options(optimizers::SGD({.learning_rate = 0.1})));
  }
  const auto train = testing::separable_blobs(32, 4);
  model->fit(train.x, train.y, {.batch_size = 16, .verbose = 0});
  model->save_weights(dir_ / "one_process");
  const json saved = testing::variable_values(model->weights());
  model.reset();
  chorus::set_cpu_devices(0);
  ASSERT_TRUE(std::filesystem::exists(dir_ / "one_process" / "model-00001-of-00001.safetensors"));
  ASSERT_EQ(run_job("load_one_process_shards", 2, /*devices=*/2), (std::vector<int>{0, 0}))
      << error(0) << "\n" << error(1);
  for (int rank = 0; rank < 2; ++rank) EXPECT_EQ(result(rank)["weights"], saved) << rank;
}

TEST_F(MultiWorkerTest, AShardARankCannotWriteFailsEveryRankAndLeavesTheEarlierCheckpoint) {
  ASSERT_EQ(run_job("failed_sharded_save", 2, /*devices=*/2), (std::vector<int>{0, 0})) << error(0) << "\n"
                                                                                       << error(1);
  EXPECT_THAT(result(0).value("save_error", ""), HasSubstr("rank 1 could not write its shard file"));
  EXPECT_THAT(result(1).value("save_error", ""),
              HasSubstr("model-00002-of-00002.safetensors: write failed: File too large"));
  for (int rank = 0; rank < 2; ++rank) EXPECT_EQ(result(rank)["after_failure"], result(rank)["saved"]) << rank;
  // Rank 0 made the staging directory and removed it as its error unwound (rank 1 may
  // look before that).
  EXPECT_TRUE(result(0)["left_beside"].is_null()) << result(0)["left_beside"];
}

TEST_F(MultiWorkerTest, MeshesOverSomeOfTheJobsDevicesAreRefused) {
  EXPECT_EQ(run_job("mesh_errors", 2, /*devices=*/2), (std::vector<int>{0, 0}));
  const json out = result(1);
  EXPECT_EQ(out["devices"], json({"cpu:0", "cpu:1", "cpu:2", "cpu:3"}));
  EXPECT_EQ(out["some_of_the_job"],
            "DeviceMesh: a mesh over several workers' devices holds every device of the job, 4 (2 workers of 2), got 3");
  EXPECT_EQ(out["another_workers"],
            "DeviceMesh: cpu:2 is another worker's device (each worker has cpu:0..cpu:1); a mesh over several "
            "workers' devices holds all 4 of them");
  EXPECT_EQ(out["beyond_the_job"],
            "cpu:4 does not exist: the job has 4 logical CPU devices (2 workers of 2; cpu:0..cpu:3)");
  EXPECT_EQ(out["data_parallel_order"],
            "DataParallel: the devices of several workers go in worker order (list_devices()); position 0 holds "
            "cpu:2, a device of worker 1");
  EXPECT_EQ(out["data_parallel_replicas"], 4);
}

TEST_F(MultiWorkerTest, WorkersWithOtherLayoutsFailTheStartupCheck) {
  EXPECT_EQ(run_job("sharded_mlp_mismatch", 2, /*devices=*/2), (std::vector<int>{1, 1}));
  EXPECT_THAT(error(0), HasSubstr("d2/kernel split along dimension 0 over mesh axis 'model'"));
  EXPECT_THAT(error(1), HasSubstr("d2/kernel split along dimension 1 over mesh axis 'model'"));
}

}  // namespace
}  // namespace chorus::testing
