// ModelParallel across worker processes (issue 21): each worker splits the model over a
// (1, 2) mesh of its own devices and the batch axis continues across the workers, so 2
// workers × 2 devices train as a (2, 2) mesh — and end where one process on one device
// does: weights, optimizer state, metrics, evaluate and predict. Workers whose layouts
// differ fail the start-up check.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chorus/chorus.h"
#include "tests/distribute/multi_worker_harness.h"
#include "tests/models/model_test_util.h"

namespace chorus {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using testing::MultiWorkerTest;
using testing::ScenarioRun;

// The MLP with its hidden layers split Megatron-style over the model axis when multi-worker
// ("mismatch": rank 1 splits d2 by columns instead), on one device when alone.
json fit_sharded_mlp_scenario(ScenarioRun& run, bool mismatch) {
  layers::set_random_seed(7);
  Tensor x = layers::Input({4});
  Tensor h = layers::Dense(8, {.activation = "relu", .name = "d1"})(x);
  h = layers::Dense(8, {.activation = "relu", .name = "d2"})(h);
  models::Model model(x, layers::Dense(3, {.name = "d3"})(h));
  const auto options = testing::mlp_compile_options(optimizers::SGD({.learning_rate = 0.1}));
  if (run.multi_worker()) {
    std::vector<Device> devices{Device::cpu(0), Device::cpu(1)};
    distribution::LayoutMap layouts(distribution::DeviceMesh({1, 2}, {"batch", "model"}, devices));
    layouts["d1/kernel"] = {std::nullopt, "model"};
    layouts["d1/bias"] = {"model"};
    layouts["d2/kernel"] = mismatch && run.rank() == 1 ? distribution::TensorLayout{std::nullopt, "model"}
                                                       : distribution::TensorLayout{"model", std::nullopt};
    auto scope = distribution::ModelParallel(layouts).scope();
    model.compile(options);
  } else {
    model.compile(options);
  }
  auto train = testing::separable_blobs(98, 3), test = testing::separable_blobs(41, 9);
  models::History history = model.fit(train.x, train.y, {.epochs = 3, .batch_size = 16, .verbose = 0, .shuffle = false});
  json out = testing::outcome(model, history);
  for (const auto& [key, value] : model.evaluate(test.x, test.y, {.batch_size = 10, .verbose = 0})) {
    out["evaluate"][key] = value;
  }
  out["predict"] = model.predict(test.x, {.batch_size = 10}).tensor().to_vector<float>();
  return out;
}

[[maybe_unused]] const bool kModelParallelScenariosRegistered = testing::register_scenarios({
    {"sharded_mlp", [](ScenarioRun& run) { return fit_sharded_mlp_scenario(run, false); }},
    {"sharded_mlp_mismatch", [](ScenarioRun& run) { return fit_sharded_mlp_scenario(run, true); }},
});

TEST_F(MultiWorkerTest, ModelParallelOnTwoWorkersOfTwoDevicesMatchesOneDevice) {
  const json reference = run_alone("sharded_mlp");
  EXPECT_EQ(run_job("sharded_mlp", 2, /*devices=*/2), (std::vector<int>{0, 0}));
  expect_matches(reference, 2);
}

TEST_F(MultiWorkerTest, WorkersWithOtherLayoutsFailTheStartupCheck) {
  EXPECT_EQ(run_job("sharded_mlp_mismatch", 2, /*devices=*/2), (std::vector<int>{1, 1}));
  EXPECT_THAT(error(0), HasSubstr("d2/kernel split along dimension 0 over mesh axis 'model'"));
  EXPECT_THAT(error(1), HasSubstr("d2/kernel split along dimension 1 over mesh axis 'model'"));
}

}  // namespace
}  // namespace chorus
