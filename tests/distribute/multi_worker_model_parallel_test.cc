// ModelParallel across worker processes (issue 21): each worker splits the model over a
// (1, 2) mesh of its own devices and the batch axis continues across the workers, so 2
// workers × 2 devices train as a (2, 2) mesh — and the MLP (with evaluate and predict),
// the two-tower model and a 2-layer Transformer encoder end where one process on one
// device does. Workers whose layouts
// differ fail the start-up check.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chorus/chorus.h"
#include "tests/distribute/multi_worker_harness.h"
#include "tests/distribute/two_tower_util.h"
#include "tests/models/model_test_util.h"

namespace chorus {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using testing::MultiWorkerTest;
using testing::ScenarioRun;

// Compiles `model` under ModelParallel with `layouts` over this worker's 2 devices when
// multi-worker, else on one device.
void compile_sharded(ScenarioRun& run, models::Model& model, models::CompileOptions options,
                     const std::vector<std::pair<std::string, distribution::TensorLayout>>& layouts) {
  if (!run.multi_worker()) {
    model.compile(std::move(options));
    return;
  }
  std::vector<Device> devices{Device::cpu(0), Device::cpu(1)};
  distribution::LayoutMap layout_map(distribution::DeviceMesh({1, 2}, {"batch", "model"}, devices));
  for (const auto& [key, layout] : layouts) layout_map[key] = layout;
  auto scope = distribution::ModelParallel(layout_map).scope();
  model.compile(std::move(options));
}

// The MLP with its hidden layers split Megatron-style over the model axis when multi-worker
// ("mismatch": rank 1 splits d2 by columns instead), on one device when alone.
json fit_sharded_mlp_scenario(ScenarioRun& run, bool mismatch) {
  layers::set_random_seed(7);
  Tensor x = layers::Input({4});
  Tensor h = layers::Dense(8, {.activation = "relu", .name = "d1"})(x);
  h = layers::Dense(8, {.activation = "relu", .name = "d2"})(h);
  models::Model model(x, layers::Dense(3, {.name = "d3"})(h));
  const distribution::TensorLayout d2 = mismatch && run.rank() == 1 ? distribution::TensorLayout{std::nullopt, "model"}
                                                                      : distribution::TensorLayout{"model", std::nullopt};
  compile_sharded(run, model, testing::mlp_compile_options(optimizers::SGD({.learning_rate = 0.1})),
                  {{"d1/kernel", {std::nullopt, "model"}}, {"d1/bias", {"model"}}, {"d2/kernel", d2}});
  auto train = testing::separable_blobs(98, 3), test = testing::separable_blobs(41, 9);
  models::History history = model.fit(train.x, train.y, {.epochs = 3, .batch_size = 16, .verbose = 0, .shuffle = false});
  json out = testing::outcome(model, history);
  for (const auto& [key, value] : model.evaluate(test.x, test.y, {.batch_size = 10, .verbose = 0})) {
    out["evaluate"][key] = value;
  }
  out["predict"] = model.predict(test.x, {.batch_size = 10}).tensor().to_vector<float>();
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
    distribute::set_cpu_devices(2);
    auto scope = distribution::DataParallel(std::vector<Device>{Device::cpu(0), Device::cpu(1)}).scope();
    model.compile(options);
  }
  auto train = testing::separable_blobs(96, 3);
  models::History history = model.fit(train.x, train.y, {.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false});
  json out = testing::outcome(model, history);
  out["world_size"] = run.world_size();  // alone: one process, though over 2 replicas
  if (!run.multi_worker()) distribute::set_cpu_devices(0);
  return out;
}

// The two-tower model with both tables split by rows.
json fit_sharded_two_tower_scenario(ScenarioRun& run) {
  layers::set_random_seed(11);
  testing::TwoTower model(32, 40, 8);
  compile_sharded(run, model, {.optimizer = optimizers::Adagrad(0.2)}, {{".*/embeddings", {"model", std::nullopt}}});
  models::History history = model.fit(testing::two_tower_ratings(250, 32, 40).batch(64), {.epochs = 3, .verbose = 0});
  return testing::outcome(model, history);
}

// Two Transformer encoder layers with heads and feedforward blocks split (SGD: see
// model_parallel_test.cc on the key bias).
json fit_sharded_transformer_scenario(ScenarioRun& run) {
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
                   {".*/feedforward_output_dense/kernel", {"model", std::nullopt}}});
  Generator gen(4);
  models::History history = model.fit(uniform(Shape{80, 6, 16}, gen, -1, 1), uniform(Shape{80, 6, 4}, gen, -1, 1),
                                      {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  return testing::outcome(model, history);
}

[[maybe_unused]] const bool kModelParallelScenariosRegistered = testing::register_scenarios({
    {"sharded_mlp", [](ScenarioRun& run) { return fit_sharded_mlp_scenario(run, false); }},
    {"sharded_mlp_mismatch", [](ScenarioRun& run) { return fit_sharded_mlp_scenario(run, true); }},
    {"sharded_two_tower", fit_sharded_two_tower_scenario},
    {"sharded_batch_norm", fit_batch_norm_scenario},
    {"sharded_transformer", fit_sharded_transformer_scenario},
});

TEST_F(MultiWorkerTest, ModelParallelOnTwoWorkersOfTwoDevicesMatchesOneDevice) {
  for (const char* scenario : {"sharded_mlp", "sharded_two_tower", "sharded_transformer", "sharded_batch_norm"}) {
    SCOPED_TRACE(scenario);
    const json reference = run_alone(scenario);
    EXPECT_EQ(run_job(scenario, 2, /*devices=*/2), (std::vector<int>{0, 0}));
    expect_matches(reference, 2);
  }
}

TEST_F(MultiWorkerTest, WorkersWithOtherLayoutsFailTheStartupCheck) {
  EXPECT_EQ(run_job("sharded_mlp_mismatch", 2, /*devices=*/2), (std::vector<int>{1, 1}));
  EXPECT_THAT(error(0), HasSubstr("d2/kernel split along dimension 0 over mesh axis 'model'"));
  EXPECT_THAT(error(1), HasSubstr("d2/kernel split along dimension 1 over mesh axis 'model'"));
}

}  // namespace
}  // namespace chorus
