// Each callback once through Model::fit on a tiny linear model.
#include <cmath>
#include <filesystem>
#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/callbacks/callbacks.h"
#include "chorus/callbacks/python_format.h"
#include "chorus/io/atomic_file.h"
#include "tests/callbacks/callback_test_util.h"
#include "tests/testing/temp_dir.h"

namespace chorus::callbacks {
namespace {

namespace fs = std::filesystem;

class CallbacksFitTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    layers::Layer::reset_names();
    layers::set_random_seed(3);
  }
  testing::LinearData data_ = testing::linear_data(8, 11);
};

// Keras's docstring example: a loss that never improves stops after patience + 1 epochs.
TEST_F(CallbacksFitTest, EarlyStopping) {
  auto model = testing::linear_model(0.0);  // a constant loss
  auto callback = std::make_shared<EarlyStopping>(EarlyStoppingOptions{.monitor = "loss", .patience = 3});
  models::History history =
      model->fit(data_.x, data_.y, {.epochs = 10, .batch_size = 4, .verbose = 0, .callbacks = {callback}, .shuffle = false});
  EXPECT_EQ(history.history.at("loss").size(), 4u);
  EXPECT_EQ(callback->stopped_epoch(), 3);
}

TEST_F(CallbacksFitTest, ModelCheckpoint) {
  auto model = testing::linear_model(0.05);
  const std::string pattern = (dir_ / "ckpt-{epoch:02d}-{val_loss:.4f}.keras").string();
  models::History history = model->fit(data_.x, data_.y,
                                       {.epochs = 2, .batch_size = 2, .verbose = 0, .callbacks = {ModelCheckpoint(pattern)},
                                        .validation_split = 0.25, .shuffle = false});
  for (int epoch = 1; epoch <= 2; ++epoch) {
    const std::string name = fmt::format("ckpt-{:02d}-{}.keras", epoch,
                                         python_fixed(history.history.at("val_loss")[epoch - 1], 4));
    EXPECT_TRUE(fs::is_directory(dir_ / name)) << name;
  }
}

TEST_F(CallbacksFitTest, LearningRateScheduler) {
  auto model = testing::linear_model(0.1);
  std::vector<int> epochs;
  LearningRateScheduler callback([&](int epoch, double lr) {
    epochs.push_back(epoch);
    return epoch == 0 ? lr : lr * 0.5;
  });
  model->fit(data_.x, data_.y, {.epochs = 3, .batch_size = 4, .verbose = 0, .callbacks = {std::move(callback)}});
  EXPECT_EQ(epochs, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(model->optimizer().learning_rate(), 0.025);
}

// With mode kMax a falling loss never improves, so each epoch after the first reduces.
TEST_F(CallbacksFitTest, ReduceLROnPlateau) {
  auto model = testing::linear_model(0.01);
  models::History history = model->fit(
      data_.x, data_.y,
      {.epochs = 4, .batch_size = 4, .verbose = 0,
       .callbacks = {ReduceLROnPlateau({.monitor = "loss", .patience = 1, .mode = Mode::kMax})}, .shuffle = false});
  const auto& loss = history.history.at("loss");
  for (size_t i = 1; i < loss.size(); ++i) ASSERT_LT(loss[i], loss[i - 1]);
  EXPECT_DOUBLE_EQ(model->optimizer().learning_rate(), 1e-5);
}

TEST_F(CallbacksFitTest, CSVLogger) {
  auto model = testing::linear_model(0.05);
  const fs::path path = dir_ / "log.csv";
  models::History history =
      model->fit(data_.x, data_.y,
                 {.epochs = 2, .batch_size = 2, .verbose = 0, .callbacks = {CSVLogger(path.string())}, .validation_split = 0.25});
  std::string expected = "epoch,loss,val_loss\r\n";
  for (int e = 0; e < 2; ++e) {
    expected += fmt::format("{},{},{}\r\n", e, python_repr(history.history.at("loss")[e]),
                            python_repr(history.history.at("val_loss")[e]));
  }
  EXPECT_EQ(io::read_file(path), expected);
}

TEST_F(CallbacksFitTest, TerminateOnNaN) {
  auto model = testing::linear_model(0.05);
  data_.x.data<float>()[0] = std::nanf("");
  ::testing::internal::CaptureStdout();
  models::History history = model->fit(
      data_.x, data_.y, {.epochs = 3, .batch_size = 4, .verbose = 0, .callbacks = {TerminateOnNaN()}, .shuffle = false});
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "Batch 0: Invalid loss, terminating training\n");
  EXPECT_EQ(history.epoch, (std::vector<int>{0}));
}

TEST_F(CallbacksFitTest, LambdaCallback) {
  auto model = testing::linear_model(0.05);
  int train_begin = 0, train_end = 0, batch_ends = 0;
  std::vector<double> epoch_losses;
  LambdaCallback callback({.on_epoch_end = [&](int, const Logs& logs) { epoch_losses.push_back(logs["loss"]); },
                           .on_train_begin = [&](const Logs&) { ++train_begin; },
                           .on_train_end = [&](const Logs&) { ++train_end; },
                           .on_train_batch_end = [&](int64_t, const Logs& logs) { batch_ends += logs.contains("loss"); }});
  models::History history =
      model->fit(data_.x, data_.y, {.epochs = 2, .batch_size = 4, .verbose = 0, .callbacks = {std::move(callback)}});
  EXPECT_EQ(train_begin, 1);
  EXPECT_EQ(train_end, 1);
  EXPECT_EQ(batch_ends, 4);
  EXPECT_EQ(epoch_losses, history.history.at("loss"));
}

// fit's own progress bar on stdout (not a terminal under the capture): the final line of
// each epoch, times aside.
TEST_F(CallbacksFitTest, ProgressBarLines) {
  auto model = testing::linear_model(0.05);
  ::testing::internal::CaptureStdout();
  model->fit(data_.x, data_.y, {.epochs = 2, .batch_size = 2, .verbose = 1, .validation_split = 0.25});
  const std::string one = ::testing::internal::GetCapturedStdout();
  const std::string bar = "━━━━━━━━━━━━━━━━━━━━";
  EXPECT_TRUE(std::regex_match(one, std::regex("Epoch 1/2\n3/3 " + bar +
                                               " \\d+s \\d+(s|ms|us)/step - loss: \\d+\\.\\d{4} - val_loss: \\d+\\.\\d{4}\n"
                                               "Epoch 2/2\n3/3 " + bar + " .*\n")))
      << one;
  ::testing::internal::CaptureStdout();
  model->fit(data_.x, data_.y, {.epochs = 1, .batch_size = 2, .verbose = 2});
  const std::string two = ::testing::internal::GetCapturedStdout();
  EXPECT_TRUE(std::regex_match(two, std::regex("4/4 - \\d+s - \\d+(s|ms|us)/step - loss: \\d+\\.\\d{4}\n"))) << two;
  ::testing::internal::CaptureStdout();
  model->evaluate(data_.x, data_.y, {.batch_size = 8, .verbose = 2});
  const std::string evaluate = ::testing::internal::GetCapturedStdout();
  EXPECT_TRUE(std::regex_match(evaluate, std::regex("1/1 - \\d+s - \\d+(s|ms|us)/step - loss: \\d+\\.\\d{4}\n")))
      << evaluate;
}

}  // namespace
}  // namespace chorus::callbacks
