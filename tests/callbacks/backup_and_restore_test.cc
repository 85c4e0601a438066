// BackupAndRestore: a fit interrupted at any point (mid-epoch, at an epoch's end, during
// validation) and started again ends with the uninterrupted fit's weights, optimizer
// state and History, bit for bit, on one device and on two data-parallel replicas; and a
// damaged or foreign backup is refused or skipped as documented.
#include "chorus/callbacks/backup_and_restore.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/callbacks/backup_files.h"
#include "chorus/chorus.h"
#include "chorus/io/atomic_file.h"
#include "tests/distribute/two_tower_util.h"
#include "tests/models/model_test_util.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"

namespace chorus::callbacks {
namespace {

namespace fs = std::filesystem;
using namespace testing::test_names;

// Thrown by the test's "crash" callback: the process dying at that point.
struct BackupCrash : std::runtime_error {
  BackupCrash() : std::runtime_error("crash") {}
};

// Throws BackupCrash after `after_step` training steps, or in the validation of epoch `in_validation_of`.
class BackupCrasher : public models::Callback {
 public:
  BackupCrasher(int64_t after_step, int in_validation_of) : after_step_(after_step), in_validation_of_(in_validation_of) {}
  void on_epoch_begin(int epoch, const models::Logs&) override { epoch_ = epoch; }
  void on_train_batch_end(int64_t, const models::Logs&) override {
    if (++steps_ == after_step_) throw BackupCrash();
  }
  void on_test_batch_end(int64_t, const models::Logs&) override {
    if (epoch_ == in_validation_of_) throw BackupCrash();
  }

 private:
  int64_t after_step_;
  int in_validation_of_;
  int64_t steps_ = 0;
  int epoch_ = -1;
};

struct BackupFitRun {
  std::vector<std::vector<float>> weights, optimizer;
  models::History history;
};

struct BackupRunOptions {
  std::optional<fs::path> backup_dir;
  BackupAndRestoreOptions backup;
  int64_t crash_after_step = -1;      // crash after this many training steps (all epochs)
  int crash_in_validation_of = -1;    // crash during the validation of this epoch
  int devices = 0;                    // data-parallel replicas (0: no distribution)
  bool zero = false;  // ModelParallel over 2 devices, the optimizer state split by ZeRO: backups in shards
  int64_t steps_per_epoch = -1;
  int64_t hidden = 16;  // another model's backup: another width
  bool other_names = false;  // a Dense made first: the model's layers get other global names
};

// A dropout MLP trained 4 epochs with Adam on shuffled batches (7 per epoch), validated
// each epoch, with ReduceLROnPlateau and EarlyStopping (restore_best_weights) whose
// states carry across epochs. The same program each time, as a restarted process runs.
BackupFitRun train_with_backups(const BackupRunOptions& options) {
  layers::Layer::reset_names();
  if (options.other_names) layers::Dense(1);  // before the seed, so that it draws nothing the model would
  layers::set_random_seed(3);
  if (options.devices > 0) {
    distribution::set_distribution(std::make_shared<distribution::DataParallel>(
        std::vector<Device>{Device::cpu(0), Device::cpu(1)}));
  }
  if (options.zero) {
    distribution::LayoutMap layouts(
        distribution::DeviceMesh({2, 1}, {"batch", "model"}, {Device::cpu(0), Device::cpu(1)}));
    distribution::set_distribution(std::make_shared<distribution::ModelParallel>(
        layouts, distribution::ModelParallelOptions{.shard = distribution::Shard::kOptimizerState}));
  }
  Tensor x = layers::Input({4});
  Tensor h = layers::Dense(options.hidden, {.activation = "relu"})(x);
  h = layers::Dropout(0.3)(h);
  auto model = std::make_unique<models::Model>(x, layers::Dense(3)(h));
  model->compile({.optimizer = "adam",
                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"sparse_categorical_accuracy"}});
  distribution::set_distribution(nullptr);
  const auto blobs = chorus::testing::separable_blobs(103, 5);
  auto train = data::Dataset::from_tensor_slices(Tree::list({blobs.x, blobs.y})).shuffle(103, 9).batch(16);
  if (options.steps_per_epoch > 0) train = train.repeat();
  const auto val = chorus::testing::separable_blobs(40, 6);
  std::vector<Shared<models::Callback>> callbacks = {
      ReduceLROnPlateau({.monitor = "loss", .factor = 0.5, .patience = 1}),
      EarlyStopping({.monitor = "val_loss", .patience = 10, .restore_best_weights = true})};
  callbacks.push_back(BackupCrasher(options.crash_after_step, options.crash_in_validation_of));
  if (options.backup_dir) callbacks.push_back(BackupAndRestore(*options.backup_dir, options.backup));
  BackupFitRun run;
  run.history = model->fit(train, {.epochs = 4, .verbose = 0, .callbacks = callbacks,
                                   .validation_data = data::Dataset::from_tensor_slices(Tree::list({val.x, val.y})).batch(16),
                                   .steps_per_epoch = options.steps_per_epoch});
  for (const auto& w : model->weights()) run.weights.push_back(w.value().to_vector<float>());
  for (const auto& v : model->optimizer().variables()) run.optimizer.push_back(v.value().to_vector<float>());
  return run;
}

void expect_same_fit(const BackupFitRun& resumed, const BackupFitRun& reference) {
  EXPECT_EQ(resumed.weights, reference.weights);
  EXPECT_EQ(resumed.optimizer, reference.optimizer);
  EXPECT_EQ(resumed.history.epoch, reference.history.epoch);
  EXPECT_EQ(resumed.history.history, reference.history.history);
}


class BackupAndRestoreTest : public chorus::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    chorus::set_cpu_devices(2);
  }
  void TearDown() override {
    distribution::set_distribution(nullptr);
    chorus::set_cpu_devices(0);
    TempDirTest::TearDown();
  }

  // Crashes a fit as `crash` says, starts it again, and checks the result is the
  // uninterrupted fit's.
  void expect_resumes_exactly(BackupRunOptions crash) {
    BackupRunOptions plain = crash;
    plain.crash_after_step = -1;
    plain.crash_in_validation_of = -1;
    const BackupFitRun reference =
        train_with_backups({.devices = crash.devices, .zero = crash.zero, .steps_per_epoch = crash.steps_per_epoch});
    crash.backup_dir = dir_ / "backup";
    plain.backup_dir = crash.backup_dir;
    EXPECT_THROW(train_with_backups(crash), BackupCrash);
    ASSERT_FALSE(list_backups(dir_ / "backup").empty());
    // Split optimizer state: the backups hold shard sets in place of the whole files.
    EXPECT_EQ(fs::exists(list_backups(dir_ / "backup")[0].second / "optimizer.safetensors.index.json"), crash.zero);
    expect_same_fit(train_with_backups(plain), reference);
    EXPECT_FALSE(fs::exists(dir_ / "backup"));  // delete_checkpoint
  }
};

TEST_F(BackupAndRestoreTest, ResumesMidEpochExactly) {
  expect_resumes_exactly({.backup = {.save_freq = 3}, .crash_after_step = 11});
}

TEST_F(BackupAndRestoreTest, ResumesAtAnEpochsEndExactly) {
  expect_resumes_exactly({.backup = {.save_freq = 7}, .crash_after_step = 15});
}

TEST_F(BackupAndRestoreTest, ResumesEveryEpochBackupExactly) {
  expect_resumes_exactly({.crash_after_step = 17});
}

TEST_F(BackupAndRestoreTest, ResumesAfterACrashDuringValidationExactly) {
  expect_resumes_exactly({.backup = {.save_freq = 2}, .crash_in_validation_of = 2});
}

TEST_F(BackupAndRestoreTest, ResumesAnIteratorThatRunsAcrossEpochsExactly) {
  expect_resumes_exactly({.backup = {.save_freq = 4}, .crash_after_step = 13, .steps_per_epoch = 5});
}

TEST_F(BackupAndRestoreTest, ResumesOnTwoDataParallelReplicasExactly) {
  expect_resumes_exactly({.backup = {.save_freq = 3}, .crash_after_step = 10, .devices = 2});
}

TEST_F(BackupAndRestoreTest, ResumesFromBackupsInShardsExactly) {
  expect_resumes_exactly({.backup = {.save_freq = 3}, .crash_after_step = 10, .zero = true});
}

// A subclassed model builds its tables when first called: fit builds it before the
// callbacks begin, as Keras does, so the restarted fit restores into it.
TEST_F(BackupAndRestoreTest, ASubclassedModelThatFitBuildsResumesExactly) {
  const auto train = [&](int64_t crash_after_step, bool backup) {
    layers::set_random_seed(4);
    chorus::testing::TwoTower model(30, 40, 8);
    model.compile({.optimizer = optimizers::Adagrad(0.2)});
    std::vector<Shared<models::Callback>> callbacks = {BackupCrasher(crash_after_step, -1)};
    if (backup) callbacks.push_back(BackupAndRestore(dir_ / "backup", {.save_freq = 2}));
    model.fit(chorus::testing::two_tower_ratings(200).batch(32), {.epochs = 2, .verbose = 0, .callbacks = callbacks});
    return model.weights();
  };
  const auto reference = train(-1, false);
  EXPECT_THROW(train(9, true), BackupCrash);
  EXPECT_EQ(models::max_relative_difference(train(-1, true), reference), 0.0);
}

TEST_F(BackupAndRestoreTest, KeepsTheTwoNewestBackupsAndTheirFilesWhenAsked) {
  train_with_backups({.backup_dir = dir_ / "b", .backup = {.save_freq = 5, .delete_checkpoint = false}});
  const auto backups = list_backups(dir_ / "b");
  ASSERT_EQ(backups.size(), 2u);
  EXPECT_EQ(backups[0].second.filename(), "backup-000000000025");  // of 4 epochs x 7 steps, every 5th
  EXPECT_EQ(backups[1].second.filename(), "backup-000000000020");
  for (const char* file : {"fit_state.json", "model.weights.safetensors", "optimizer.safetensors", "callbacks.safetensors"}) {
    EXPECT_TRUE(fs::exists(backups[0].second / file)) << file;
  }
}

// Crashes a fit after 11 steps with backups every 3: backup-000000000009 and -6 remain.
std::vector<std::pair<int64_t, fs::path>> crash_with_two_backups(const fs::path& dir) {
  EXPECT_THROW(train_with_backups({.backup_dir = dir, .backup = {.save_freq = 3}, .crash_after_step = 11}), BackupCrash);
  auto backups = list_backups(dir);
  EXPECT_EQ(backups.size(), 2u);
  return backups;
}

void flip_last_byte(const fs::path& file) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-1, std::ios::end);
  const char c = static_cast<char>(f.get());
  f.seekp(-1, std::ios::end);
  f.put(static_cast<char>(c ^ 1));
}

TEST_F(BackupAndRestoreTest, ADamagedNewestBackupIsReportedAndThePreviousOneUsed) {
  const BackupFitRun reference = train_with_backups({});
  const auto backups = crash_with_two_backups(dir_ / "backup");
  flip_last_byte(backups[0].second / "model.weights.safetensors");
  ::testing::internal::CaptureStderr();
  const BackupFitRun resumed = train_with_backups({.backup_dir = dir_ / "backup", .backup = {.save_freq = 3}});
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              AllOf(HasSubstr("backup-000000000009/model.weights.safetensors: its SHA-256 differs"),
                    HasSubstr("trying the previous backup")));
  expect_same_fit(resumed, reference);
}

TEST_F(BackupAndRestoreTest, EveryBackupDamagedIsAnErrorNamingEach) {
  const auto backups = crash_with_two_backups(dir_ / "backup");
  flip_last_byte(backups[0].second / "optimizer.safetensors");
  fs::resize_file(backups[1].second / "fit_state.json", 10);
  ::testing::internal::CaptureStderr();
  EXPECT_THAT([&] { train_with_backups({.backup_dir = dir_ / "backup", .backup = {.save_freq = 3}}); },
              ThrowsMessage<IOError>(AllOf(HasSubstr("every backup in"), HasSubstr("is damaged"),
                                           HasSubstr("backup-000000000009/optimizer.safetensors"),
                                           HasSubstr("backup-000000000006/fit_state.json: cannot read"))));
  ::testing::internal::GetCapturedStderr();
}

TEST_F(BackupAndRestoreTest, AnotherModelsBackupIsRefusedNamingTheFirstDifference) {
  crash_with_two_backups(dir_ / "backup");
  EXPECT_THAT([&] { train_with_backups({.backup_dir = dir_ / "backup", .backup = {.save_freq = 3}, .hidden = 8}); },
              ThrowsMessage<ValueError>(AllOf(HasSubstr("backup-000000000009 was written by another model"),
                                              HasSubstr("its weight 0 is dense/kernel (4, 16) float32"),
                                              HasSubstr("has dense/kernel (4, 8) float32"))));
}

TEST_F(BackupAndRestoreTest, AnotherInstanceOfTheModelResumesExactly) {
  const BackupFitRun reference = train_with_backups({});
  crash_with_two_backups(dir_ / "backup");
  // Layers named dense_1, dropout, dense_2 now: the backup is keyed by object paths.
  expect_same_fit(train_with_backups({.backup_dir = dir_ / "backup", .backup = {.save_freq = 3}, .other_names = true}),
                  reference);
}

TEST_F(BackupAndRestoreTest, ABackupOfANewerFormatIsRefused) {
  const auto backups = crash_with_two_backups(dir_ / "backup");
  for (const auto& backup : backups) {
    const fs::path file = backup.second / "fit_state.json";
    auto document = nlohmann::json::parse(io::read_file(file));
    document["version"] = 99;
    io::write_file_atomically(file, document.dump());
  }
  EXPECT_THAT([&] { train_with_backups({.backup_dir = dir_ / "backup", .backup = {.save_freq = 3}}); },
              ThrowsMessage<ValueError>(HasSubstr("backup format version 99 was written by a newer chorus; this build "
                                                  "reads up to 1")));
}

TEST_F(BackupAndRestoreTest, BadArgumentsAreErrors) {
  EXPECT_THAT([] { BackupAndRestore("b", {.save_freq = 0}); },
              ThrowsMessage<ValueError>(HasSubstr("expected save_freq >= 1 batches or nullopt (every epoch). Received: "
                                                  "save_freq=0")));
  EXPECT_THAT([] { BackupAndRestore(""); }, ThrowsMessage<ValueError>(HasSubstr("expected a backup_dir")));
}

}  // namespace
}  // namespace chorus::callbacks
