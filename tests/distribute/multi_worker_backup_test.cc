// BackupAndRestore in a job of real worker processes on 127.0.0.1: a job that every rank
// leaves at the same step (a crash of the job) and that is started again ends with the
// uninterrupted job's weights, optimizer state and History bit for bit, on every rank.
// The harness is tests/distribute/multi_worker_harness.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "chorus/chorus.h"
#include "tests/distribute/multi_worker_harness.h"
#include "tests/models/model_test_util.h"

namespace chorus::testing {
namespace {

using nlohmann::json;

// A dropout MLP trained 3 epochs with Adam on shuffled global batches of 16, backed up
// every 3 steps; `crash_after` > 0 crashes it there first and starts it again; < 0
// crashes it at -crash_after and ends the job.
json backup_scenario(ScenarioRun& run, int64_t crash_after) {
  auto fit = [&](int64_t crash) {
    layers::Layer::reset_names();
    layers::set_random_seed(3);
    Tensor x = layers::Input({4});
    Tensor h = layers::Dropout(0.25)(layers::Dense(16, {.activation = "relu"})(x));
    auto model = std::make_unique<models::Model>(x, layers::Dense(3)(h));
    run.compile(*model, testing::mlp_compile_options(optimizers::Adam(0.01)));
    const auto blobs = testing::separable_blobs(103, 5);
    const auto train = data::Dataset::from_tensor_slices(Tree::list({blobs.x, blobs.y})).shuffle(103, 9).batch(16);
    models::History history =
        model->fit(train, {.epochs = 3, .verbose = 0, .callbacks = testing::backup_callbacks(3, crash)});
    return testing::outcome(*model, history);
  };
  return testing::crash_and_restart(crash_after, fit);
}

[[maybe_unused]] const bool kBackupScenariosRegistered = testing::register_scenarios({
    {"backup_uninterrupted", [](ScenarioRun& run) { return backup_scenario(run, 0); }},
    {"backup_crash_mid_epoch", [](ScenarioRun& run) { return backup_scenario(run, 11); }},
    {"backup_crash_only", [](ScenarioRun& run) { return backup_scenario(run, -11); }},
});

TEST_F(MultiWorkerTest, AJobStartedAgainAfterACrashMidEpochEndsAsTheUninterruptedJobBitForBit) {
  ASSERT_EQ(run_job("backup_uninterrupted", 2), std::vector<int>(2, 0)) << error(0) << error(1);
  const json uninterrupted = result(0);
  expect_matches(run_alone("backup_uninterrupted"), 2);
  ASSERT_EQ(run_job("backup_crash_mid_epoch", 2), std::vector<int>(2, 0)) << error(0) << error(1);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(result(rank)["weights"], uninterrupted["weights"]) << rank;
    EXPECT_EQ(result(rank)["optimizer"], uninterrupted["optimizer"]) << rank;
    EXPECT_EQ(result(rank)["history"], uninterrupted["history"]) << rank;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "backup"));
}

TEST_F(MultiWorkerTest, ABackupOfThreeWorkersResumesOnTwoWithTheSameGlobalBatches) {
  // The backup holds the global data position: a job restarted with fewer workers takes
  // the same global batches (each worker a larger share) and ends where the
  // uninterrupted job does, up to the order of the gradient sums.
  ASSERT_EQ(run_job("backup_uninterrupted", 3), std::vector<int>(3, 0)) << error(0);
  const json uninterrupted = result(0);
  EXPECT_EQ(run_job("backup_crash_only", 3), std::vector<int>(3, 1));
  EXPECT_THAT(error(0), ::testing::HasSubstr("job crash"));
  ASSERT_EQ(run_job("backup_uninterrupted", 2), std::vector<int>(2, 0)) << error(0) << error(1);
  EXPECT_LE(worst_relative_difference(uninterrupted["weights"], result(0)["weights"], "weights"), 1e-5);
  EXPECT_LE(worst_relative_difference(uninterrupted["optimizer"], result(0)["optimizer"], "optimizer"), 1e-5);
  EXPECT_EQ(result(0)["history"]["loss"].size(), 3u);
}

}  // namespace
}  // namespace chorus::testing
