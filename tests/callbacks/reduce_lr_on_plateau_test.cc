#include "chorus/callbacks/reduce_lr_on_plateau.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "tests/callbacks/callback_test_util.h"
#include "tests/testing/test_names.h"

namespace chorus::callbacks {
namespace {

using namespace testing::test_names;

// Rates follow Keras's rule by hand: wait counts epochs without improvement (by more than
// min_delta), a reduction resets it and starts the cooldown, min_lr bounds the rate.
TEST(ReduceLROnPlateauTest, ReducesAfterPatienceWithCooldownAndFloor) {
  auto model = testing::linear_model(0.1);
  ReduceLROnPlateau callback({.factor = 0.5, .patience = 2, .verbose = 1, .cooldown = 1, .min_lr = 0.02});
  callback.set_model(model.get());
  callback.on_train_begin({});
  std::vector<double> rates;
  ::testing::internal::CaptureStdout();
  for (int epoch = 0; epoch < 10; ++epoch) {
    // 1.00005 is no improvement on 1.0 (min_delta 1e-4).
    callback.on_epoch_end(epoch, {{"loss", 3.0}, {"val_loss", epoch == 1 ? 1.00005 : 1.0}});
    rates.push_back(model->optimizer().learning_rate());
  }
  EXPECT_EQ(rates, (std::vector<double>{0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.02, 0.02, 0.02, 0.02}));
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "\nEpoch 3: ReduceLROnPlateau reducing learning rate to 0.05.\n"
            "\nEpoch 5: ReduceLROnPlateau reducing learning rate to 0.025.\n"
            "\nEpoch 7: ReduceLROnPlateau reducing learning rate to 0.02.\n");
}

TEST(ReduceLROnPlateauTest, ImprovementsResetTheWait) {
  auto model = testing::linear_model(1.0);
  ReduceLROnPlateau callback({.monitor = "val_accuracy", .patience = 2});
  callback.set_model(model.get());
  callback.on_train_begin({});
  for (double accuracy : {0.5, 0.5, 0.6, 0.6, 0.7}) callback.on_epoch_end(0, {{"val_accuracy", accuracy}});
  EXPECT_EQ(model->optimizer().learning_rate(), 1.0);
  EXPECT_EQ(callback.wait(), 0);
  callback.on_epoch_end(0, {{"val_accuracy", 0.7}});
  callback.on_epoch_end(0, {{"val_accuracy", 0.65}});
  EXPECT_DOUBLE_EQ(model->optimizer().learning_rate(), 0.1);
}

TEST(ReduceLROnPlateauTest, MissingMonitorWarnsOnce) {
  auto model = testing::linear_model(1.0);
  ReduceLROnPlateau callback({.patience = 0});
  callback.set_model(model.get());
  callback.on_train_begin({});
  ::testing::internal::CaptureStderr();
  callback.on_epoch_end(0, {{"loss", 1.0}});
  callback.on_epoch_end(1, {{"loss", 1.0}});
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "WARNING: Learning rate reduction is conditioned on metric `val_loss` which is not available. Available "
            "metrics are: loss.\n");
  EXPECT_EQ(model->optimizer().learning_rate(), 1.0);
}

TEST(ReduceLROnPlateauTest, FactorMustBeBelowOne) {
  EXPECT_THAT([] { ReduceLROnPlateau({.factor = 1.0}); },
              ThrowsMessage<ValueError>(HasSubstr("ReduceLROnPlateau does not support a factor >= 1.0. Received factor=1.0")));
  EXPECT_THAT([] { ReduceLROnPlateau({.factor = 2.5}); }, ThrowsMessage<ValueError>(HasSubstr("Received factor=2.5")));
}

}  // namespace
}  // namespace chorus::callbacks
