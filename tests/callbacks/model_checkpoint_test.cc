#include "chorus/callbacks/model_checkpoint.h"

#include <algorithm>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "tests/callbacks/callback_test_util.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"

namespace chorus::callbacks {
namespace {

namespace fs = std::filesystem;
using models::Logs;
using namespace testing::test_names;

class ModelCheckpointTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    layers::Layer::reset_names();
    model_ = testing::linear_model();
  }
  std::string at(const std::string& name) const { return (dir_ / name).string(); }
  void epoch(ModelCheckpoint& callback, int e, const Logs& logs) {
    callback.on_epoch_begin(e, {});
    callback.on_epoch_end(e, logs);
  }
  std::unique_ptr<models::Model> model_;
};

TEST_F(ModelCheckpointTest, FormatsTheFilepathLikePython) {
  ModelCheckpoint callback(at("ckpt-{epoch:02d}-{val_loss:.4f}.keras"));
  EXPECT_EQ(callback.format_filepath(2, std::nullopt, {{"loss", 1.0}, {"val_loss", 0.123456}}),
            at("ckpt-03-0.1235.keras"));
  ModelCheckpoint batches(at("e{epoch}-b{batch:03d}"), {.save_freq = 5});
  EXPECT_EQ(batches.format_filepath(0, 4, {}), at("e1-b005"));
  // A "batch" in the logs is used as is (Keras): a float.
  EXPECT_EQ(ModelCheckpoint(at("b{batch}"), {.save_freq = 5}).format_filepath(0, 4, {{"batch", 7.0}}), at("b7.0"));
  EXPECT_THAT([&] { batches.format_filepath(0, std::nullopt, {{"loss", 1.0}}); },
              ThrowsMessage<ValueError>(HasSubstr("ModelCheckpoint: filepath: failed to format \"" + at("e{epoch}-b{batch:03d}") +
                                                  "\": no value named 'batch'; the values are: epoch, loss")));
}

TEST_F(ModelCheckpointTest, BadArgumentsAreErrors) {
  EXPECT_THAT([&] { ModelCheckpoint(at("ckpt"), {.save_freq = 0}); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "ModelCheckpoint: expected save_freq >= 1 batches or nullopt (every epoch). Received: save_freq=0")));
  EXPECT_THAT([&] { ModelCheckpoint(at("ckpt-{epoch")); },
              ThrowsMessage<ValueError>(HasSubstr("ModelCheckpoint: filepath: bad template")));
  EXPECT_THAT([&] { ModelCheckpoint(at("ckpt"), {.monitor = "val_f1"}); },
              ThrowsMessage<ValueError>(HasSubstr("ModelCheckpoint callback received monitor=val_f1")));
}

TEST_F(ModelCheckpointTest, SavesTheModelEveryEpoch) {
  ModelCheckpoint callback(at("sub/dir/ckpt-{epoch}.keras"));
  callback.set_model(model_.get());
  callback.on_train_begin({});
  epoch(callback, 0, {{"loss", 1.0}});
  epoch(callback, 1, {{"loss", 0.5}});
  EXPECT_TRUE(fs::is_directory(at("sub/dir/ckpt-1.keras")));
  EXPECT_TRUE(fs::is_directory(at("sub/dir/ckpt-2.keras")));
  auto restored = models::load_model(at("sub/dir/ckpt-2.keras"));
  EXPECT_EQ(restored->weights().size(), model_->weights().size());
}

TEST_F(ModelCheckpointTest, SavesWeightsOnly) {
  ModelCheckpoint callback(at("w-{epoch}.weights.safetensors"), {.save_weights_only = true});
  callback.set_model(model_.get());
  epoch(callback, 0, {{"loss", 1.0}});
  ASSERT_TRUE(fs::is_regular_file(at("w-1.weights.safetensors")));
  const std::vector<float> saved = model_->weights()[0].value().to_vector<float>();
  for (const auto& w : model_->weights()) w.assign(full(w.shape(), 7.0));
  model_->load_weights(at("w-1.weights.safetensors"));
  EXPECT_EQ(model_->weights()[0].value().to_vector<float>(), saved);
}

TEST_F(ModelCheckpointTest, WeightsOnlyToAnExistingDirectoryIsAnError) {
  fs::create_directories(at("taken"));
  ModelCheckpoint callback(at("taken"), {.save_weights_only = true});
  callback.set_model(model_.get());
  EXPECT_THAT([&] { epoch(callback, 0, {{"loss", 1.0}}); },
              ThrowsMessage<IOError>(HasSubstr("Please specify a non-directory filepath for ModelCheckpoint. Filepath "
                                               "used is an existing directory: " +
                                               at("taken"))));
}

TEST_F(ModelCheckpointTest, SaveBestOnlyWithMessages) {
  ModelCheckpoint callback(at("best-{epoch}.keras"), {.verbose = 1, .save_best_only = true});
  callback.set_model(model_.get());
  ::testing::internal::CaptureStdout();
  epoch(callback, 0, {{"loss", 1.0}, {"val_loss", 0.5}});
  epoch(callback, 1, {{"loss", 1.0}, {"val_loss", 0.7}});
  epoch(callback, 2, {{"loss", 1.0}, {"val_loss", 0.4}});
  const std::string p1 = at("best-1.keras"), p3 = at("best-3.keras");
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "\nEpoch 1: val_loss improved from None to 0.50000, saving model to " + p1 + "\n" +
                "\nEpoch 1: finished saving model to " + p1 + "\n" +
                "\nEpoch 2: val_loss did not improve from 0.50000\n" +
                "\nEpoch 3: val_loss improved from 0.50000 to 0.40000, saving model to " + p3 + "\n" +
                "\nEpoch 3: finished saving model to " + p3 + "\n");
  EXPECT_TRUE(fs::exists(p1));
  EXPECT_FALSE(fs::exists(at("best-2.keras")));
  EXPECT_TRUE(fs::exists(p3));
  EXPECT_EQ(callback.best(), 0.4);
}

TEST_F(ModelCheckpointTest, InitialValueThresholdAndMaxMode) {
  ModelCheckpoint callback(at("best-{epoch}.keras"),
                           {.monitor = "val_accuracy", .save_best_only = true, .initial_value_threshold = 0.8});
  callback.set_model(model_.get());
  EXPECT_FALSE(callback.minimizing());
  epoch(callback, 0, {{"val_accuracy", 0.75}});
  epoch(callback, 1, {{"val_accuracy", 0.85}});
  EXPECT_FALSE(fs::exists(at("best-1.keras")));
  EXPECT_TRUE(fs::exists(at("best-2.keras")));
}

// Keras 3 warns and saves when it cannot judge.
TEST_F(ModelCheckpointTest, SaveBestOnlyWithoutTheMonitorWarnsOnceAndSaves) {
  ModelCheckpoint callback(at("ckpt-{epoch}.keras"), {.save_best_only = true});
  callback.set_model(model_.get());
  ::testing::internal::CaptureStderr();
  epoch(callback, 0, {{"loss", 1.0}});
  epoch(callback, 1, {{"loss", 1.0}});
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "WARNING: Can save best model only with val_loss available.\n");
  EXPECT_TRUE(fs::exists(at("ckpt-1.keras")));
  EXPECT_TRUE(fs::exists(at("ckpt-2.keras")));
}

// Batches are counted across epochs; a batch index that does not grow starts an epoch.
TEST_F(ModelCheckpointTest, SavesEveryNBatches) {
  ModelCheckpoint callback(at("e{epoch}-b{batch}.weights.safetensors"), {.save_weights_only = true, .save_freq = 2});
  callback.set_model(model_.get());
  for (int e = 0; e < 2; ++e) {
    callback.on_epoch_begin(e, {});
    for (int64_t b = 0; b < 3; ++b) callback.on_train_batch_end(b, {{"loss", 1.0}});
    callback.on_epoch_end(e, {{"loss", 1.0}});
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"e1-b2.weights.safetensors", "e2-b1.weights.safetensors",
                                             "e2-b3.weights.safetensors"}));
}

TEST_F(ModelCheckpointTest, AFieldMissingFromTheLogsIsAnErrorAtSaveTime) {
  ModelCheckpoint callback(at("ckpt-{val_acc:.2f}.keras"), {.monitor = "val_acc"});
  callback.set_model(model_.get());
  EXPECT_THAT([&] { epoch(callback, 0, {{"loss", 1.0}}); },
              ThrowsMessage<ValueError>(HasSubstr("no value named 'val_acc'; the values are: epoch, loss")));
}

}  // namespace
}  // namespace chorus::callbacks
