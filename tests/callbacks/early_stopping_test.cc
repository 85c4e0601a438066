#include "chorus/callbacks/early_stopping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "tests/callbacks/callback_test_util.h"
#include "tests/testing/test_names.h"

namespace chorus::callbacks {
namespace {

using models::Logs;
using namespace testing::test_names;

class EarlyStoppingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    layers::Layer::reset_names();
    model_ = testing::linear_model();
  }
  // Feeds `values` of `monitor` as consecutive epochs until the callback stops training;
  // returns the number of epochs run.
  int run(EarlyStopping& callback, const std::vector<double>& values, const std::string& monitor = "val_loss") {
    callback.set_model(model_.get());
    model_->stop_training = false;
    callback.on_train_begin({});
    int epoch = 0;
    for (; epoch < static_cast<int>(values.size()) && !model_->stop_training; ++epoch) {
      callback.on_epoch_end(epoch, {{"other", 9.0}, {monitor, values[epoch]}});
    }
    callback.on_train_end({});
    return epoch;
  }
  // Sets every weight of the model to `value`.
  void set_weights(float value) {
    for (const auto& w : model_->weights()) w.assign(full(w.shape(), value));
  }
  float first_weight() const { return model_->weights()[0].value().to_vector<float>()[0]; }

  std::unique_ptr<models::Model> model_;
};

TEST_F(EarlyStoppingTest, StopsAfterPatienceEpochsWithoutImprovement) {
  EarlyStopping callback({.patience = 2});
  EXPECT_EQ(run(callback, {1.0, 0.9, 0.95, 0.92, 0.1}), 4);
  EXPECT_EQ(callback.stopped_epoch(), 3);
  EXPECT_EQ(callback.best_epoch(), 1);
  EXPECT_EQ(callback.best(), 0.9);
}

TEST_F(EarlyStoppingTest, PatienceZeroStopsAtTheFirstEpochWithoutImprovement) {
  EarlyStopping callback;
  EXPECT_EQ(run(callback, {1.0, 0.5, 0.5, 0.1}), 3);  // equal is no improvement
  EXPECT_EQ(callback.stopped_epoch(), 2);
}

TEST_F(EarlyStoppingTest, MinDeltaIsTheSmallestImprovement) {
  EarlyStopping callback({.min_delta = -0.1});  // the sign is ignored, as in Keras
  EXPECT_EQ(run(callback, {1.0, 0.85, 0.8, 0.1}), 3);  // 0.85 improves by > 0.1, 0.8 only by 0.05
  EXPECT_EQ(callback.best(), 0.85);
}

TEST_F(EarlyStoppingTest, AccuracyIsMaximised) {
  EarlyStopping callback({.monitor = "val_accuracy"});
  EXPECT_FALSE(callback.minimizing());
  EXPECT_EQ(run(callback, {0.5, 0.6, 0.55, 0.9}, "val_accuracy"), 3);
  EarlyStopping forced({.monitor = "val_loss", .mode = Mode::kMax});
  EXPECT_EQ(run(forced, {0.5, 0.6, 0.55, 0.9}), 3);
}

// Improvements that do not beat the baseline do not restart the wait.
TEST_F(EarlyStoppingTest, BaselineMustBeBeatenWithinPatience) {
  EarlyStopping callback({.monitor = "loss", .patience = 2, .baseline = 0.5});
  EXPECT_EQ(run(callback, {0.9, 0.95, 0.1}, "loss"), 2);
  EXPECT_EQ(callback.stopped_epoch(), 1);
  EarlyStopping beaten({.monitor = "loss", .patience = 2, .baseline = 0.5});
  EXPECT_EQ(run(beaten, {0.4, 0.45, 0.3, 0.35, 0.36, 0.37}, "loss"), 5);
}

TEST_F(EarlyStoppingTest, StartFromEpochIsAWarmUp) {
  EarlyStopping callback({.start_from_epoch = 2});
  EXPECT_EQ(run(callback, {1.0, 2.0, 3.0, 3.5, 1.0}), 4);
  EXPECT_EQ(callback.best_epoch(), 2);
}

TEST_F(EarlyStoppingTest, RestoresTheBestWeightsAtTheEnd) {
  EarlyStopping callback({.restore_best_weights = true});
  callback.set_model(model_.get());
  callback.on_train_begin({});
  set_weights(1.0f);
  callback.on_epoch_end(0, {{"val_loss", 1.0}});
  set_weights(2.0f);
  callback.on_epoch_end(1, {{"val_loss", 0.5}});  // best: weights 2
  set_weights(3.0f);
  callback.on_epoch_end(2, {{"val_loss", 0.7}});
  EXPECT_TRUE(model_->stop_training);
  EXPECT_EQ(first_weight(), 3.0f);
  callback.on_train_end({});
  for (const auto& w : model_->weights()) {
    for (float v : w.value().to_vector<float>()) EXPECT_EQ(v, 2.0f) << w.path();
  }
}

// Keras 3 restores the best weights even when training ran to the end.
TEST_F(EarlyStoppingTest, RestoresAlsoWithoutStopping) {
  EarlyStopping callback({.patience = 10, .restore_best_weights = true});
  callback.set_model(model_.get());
  callback.on_train_begin({});
  set_weights(1.0f);
  callback.on_epoch_end(0, {{"val_loss", 1.0}});
  set_weights(2.0f);
  callback.on_epoch_end(1, {{"val_loss", 3.0}});
  EXPECT_FALSE(model_->stop_training);
  callback.on_train_end({});
  EXPECT_EQ(first_weight(), 1.0f);
}

TEST_F(EarlyStoppingTest, VerboseMessages) {
  EarlyStopping callback({.patience = 1, .verbose = 1, .restore_best_weights = true});
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(run(callback, {1.0, 0.5, 0.6, 0.1}), 3);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "Epoch 3: early stopping\nRestoring model weights from the end of the best epoch: 2.\n");
}

TEST_F(EarlyStoppingTest, MissingMonitorWarnsOnceAndNeverStops) {
  EarlyStopping callback;
  callback.set_model(model_.get());
  callback.on_train_begin({});
  ::testing::internal::CaptureStderr();
  for (int epoch = 0; epoch < 3; ++epoch) callback.on_epoch_end(epoch, {{"loss", 1.0}, {"accuracy", 0.5}});
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "WARNING: Early stopping conditioned on metric `val_loss` which is not available. Available metrics are: "
            "loss,accuracy\n");
  EXPECT_FALSE(model_->stop_training);
}

TEST_F(EarlyStoppingTest, EachFitStartsAfresh) {
  EarlyStopping callback;
  EXPECT_EQ(run(callback, {1.0, 2.0}), 2);
  EXPECT_EQ(run(callback, {5.0, 4.0, 3.0}), 3);  // the old best (1.0) is forgotten
  EXPECT_EQ(callback.stopped_epoch(), 0);
}

TEST(MonitorModeTest, AutoInfersTheDirectionFromTheName) {
  EXPECT_TRUE(EarlyStopping({.monitor = "loss"}).minimizing());
  EXPECT_TRUE(EarlyStopping({.monitor = "val_output_1_loss"}).minimizing());
  EXPECT_TRUE(EarlyStopping({.monitor = "val_mae"}).minimizing());
  EXPECT_TRUE(EarlyStopping({.monitor = "sparse_categorical_crossentropy"}).minimizing());
  EXPECT_FALSE(EarlyStopping({.monitor = "val_sparse_categorical_accuracy"}).minimizing());
  EXPECT_FALSE(EarlyStopping({.monitor = "acc"}).minimizing());
  EXPECT_FALSE(EarlyStopping({.monitor = "loss", .mode = Mode::kMax}).minimizing());
  EXPECT_TRUE(EarlyStopping({.monitor = "val_accuracy", .mode = Mode::kMin}).minimizing());
  EXPECT_TRUE(EarlyStopping({.monitor = "my_score", .mode = Mode::kMin}).minimizing());
}

TEST(MonitorModeTest, AnUnknownDirectionIsAnError) {
  EXPECT_THAT([] { EarlyStopping({.monitor = "val_my_score"}); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "EarlyStopping callback received monitor=val_my_score, but chorus isn't able to automatically "
                  "determine whether that metric should be maximized or minimized. Pass `.mode = Mode::kMax`")));
}

TEST(MonitorModeTest, AModeOutsideTheEnumIsAnError) {
  EXPECT_THAT([] { EarlyStopping({.mode = static_cast<Mode>(7)}); },
              ThrowsMessage<ValueError>(
                  HasSubstr("EarlyStopping: expected mode Mode::kAuto, Mode::kMin or Mode::kMax. Received: mode=7")));
}

}  // namespace
}  // namespace chorus::callbacks
