// The CLI's fault tolerance, through the built binary: `chorus train RECIPE --backup-dir
// --backup-every --save-weights`, and `chorus checkpoint inspect` on a saved model (with
// a crashed save's temporary beside it) and on a backup directory.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/chorus.h"
#include "chorus/io/safetensors.h"
#include "tests/callbacks/callback_test_util.h"
#include "tests/testing/run_chorus.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"

namespace chorus::callbacks {
namespace {

namespace fs = std::filesystem;
using namespace testing::test_names;
using chorus::testing::run_chorus;

class FaultToleranceCommandTest : public chorus::testing::TempDirTest {};

TEST_F(FaultToleranceCommandTest, TrainWritesBackupsDeletesThemAtTheEndAndSavesTheWeights) {
  const std::string backup = (dir_ / "backup").string(), weights = (dir_ / "final.safetensors").string();
  const auto run = run_chorus(fmt::format(
      "train mnist-mlp --epochs 1 --verbose 0 --backup-dir {} --backup-every 300 --save-weights {}", backup, weights));
  if (run.exit_code == -1) GTEST_SKIP() << run.output;
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_FALSE(fs::exists(backup));  // deleted after a fit that ended normally
  const auto saved = io::load_safetensors(weights).tensors;
  ASSERT_EQ(saved.size(), 6u);  // three Dense layers' kernels and biases
  EXPECT_EQ(saved[0].first, "dense/kernel");
  EXPECT_EQ(saved[0].second.shape(), Shape({784, 256}));
}

TEST_F(FaultToleranceCommandTest, InspectListsAModelsFilesAndADeadWritersTemporary) {
  auto model = chorus::testing::linear_model();
  model->save(dir_ / "model");
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  fs::create_directories(dir_ / fmt::format("model.tmp-{}-00000000000000aa", dead));
  const auto run = run_chorus("checkpoint inspect " + (dir_ / "model").string());
  if (run.exit_code == -1) GTEST_SKIP() << run.output;
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, AllOf(HasSubstr("model: a saved model\n"), HasSubstr("  config.json  "),
                                HasSubstr("  model.weights.safetensors  "), HasSubstr("  state.json  "),
                                HasSubstr(fmt::format("model.tmp-{}-00000000000000aa: left by process {}, which ended; "
                                                      "the next save removes it",
                                                      dead, dead))));
  const auto missing = run_chorus("checkpoint inspect " + (dir_ / "nope").string());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("chorus: error: chorus checkpoint inspect: " + (dir_ / "nope").string() +
                                        " does not exist"));
}

// inspect runs load_model's checks (models::check_saved_model) on a saved model: a
// config.json that load_model refuses is not called a saved model, and the error names
// the file with load_model's own message.
TEST_F(FaultToleranceCommandTest, InspectRefusesWhatLoadModelRefusesNamingTheFile) {
  auto model = chorus::testing::linear_model();
  model->save(dir_ / "model");
  std::ofstream(dir_ / "model" / "config.json") << "[1,2,3]";
  const std::string config = (dir_ / "model" / "config.json").string();
  const std::string message =
      "load_model: " + config + ": expected an object with \"class_name\" and \"config\", found array";
  EXPECT_THAT([&] { models::load_model(dir_ / "model"); }, ::testing::ThrowsMessage<IOError>(HasSubstr(message)));
  const auto run = run_chorus("checkpoint inspect " + (dir_ / "model").string());
  if (run.exit_code == -1) GTEST_SKIP() << run.output;
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("chorus: error: " + message));
  EXPECT_THAT(run.output, ::testing::Not(HasSubstr("a saved model")));
  // A key no layer takes is refused the same way, naming the file and the key.
  model->save(dir_ / "typo");
  nlohmann::json typo = nlohmann::json::parse(std::ifstream(dir_ / "typo" / "config.json"));
  typo["config"]["layers"][1]["config"]["unitz"] = 1;
  std::ofstream(dir_ / "typo" / "config.json") << typo.dump();
  const auto typo_run = run_chorus("checkpoint inspect " + (dir_ / "typo").string());
  EXPECT_EQ(typo_run.exit_code, 1) << typo_run.output;
  EXPECT_THAT(typo_run.output, HasSubstr((dir_ / "typo" / "config.json").string() +
                                         ": config.layers[1]: Dense: unexpected config key 'unitz' (did you mean "
                                         "'units'?)"));
}

TEST_F(FaultToleranceCommandTest, InspectListsTheTensorsInEachShardFile) {
  chorus::set_cpu_devices(2);
  distribution::LayoutMap layouts(distribution::DeviceMesh({1, 2}, {"batch", "model"}, {Device::cpu(0), Device::cpu(1)}));
  layouts["hidden/kernel"] = {std::nullopt, "model"};
  distribution::set_distribution(std::make_shared<distribution::ModelParallel>(layouts, "batch"));
  Tensor x = layers::Input({3});
  Tensor h = layers::Dense(4, {.name = "hidden"})(x);
  models::Model model(x, layers::Dense(1)(h));
  model.compile({.optimizer = optimizers::SGD(0.1), .loss = "mse"});
  distribution::set_distribution(nullptr);
  const auto data = chorus::testing::linear_data(8, 1);
  model.fit(data.x, data.y, {.batch_size = 8, .verbose = 0});  // placed on the mesh: hidden/kernel split
  model.save(dir_ / "model");
  chorus::set_cpu_devices(0);
  const auto run = run_chorus("checkpoint inspect " + (dir_ / "model").string());
  if (run.exit_code == -1) GTEST_SKIP() << run.output;
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("  model in 1 shard files (model.safetensors.index.json):\n"
                                    "    model-00001-of-00001.safetensors:\n"
                                    "      dense/kernel (3, 4) float32\n"
                                    "      dense/bias (4,) float32\n"
                                    "      dense_1/kernel (4, 1) float32\n"
                                    "      dense_1/bias (1,) float32\n"));
}

TEST_F(FaultToleranceCommandTest, InspectListsBackupsWithWhereTheirFitStood) {
  auto model = chorus::testing::linear_model();
  const auto data = chorus::testing::linear_data(40, 1);
  model->fit(data.x, data.y, {.epochs = 2, .batch_size = 8, .verbose = 0,
                              .callbacks = {BackupAndRestore(dir_ / "b", {.save_freq = 3, .delete_checkpoint = false})}});
  const auto run = run_chorus("checkpoint inspect " + (dir_ / "b").string());
  if (run.exit_code == -1) GTEST_SKIP() << run.output;
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, AllOf(HasSubstr("b: BackupAndRestore backups, newest first\n"),
                                HasSubstr("  backup-000000000009: after 9 training steps (epoch 2, batch 4)\n"),
                                HasSubstr("  backup-000000000006: after 6 training steps (epoch 2, batch 1)\n"),
                                HasSubstr("    fit_state.json  ")));
}

}  // namespace
}  // namespace chorus::callbacks
