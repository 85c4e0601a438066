// Which callbacks say they act on every batch (implements_train/test_batch_hooks): a
// multi-worker fit merges the workers' metrics after each step only for those, so a
// callback that reads batch logs must say so and one that does not should not.
#include <gtest/gtest.h>

#include <sstream>

#include "chorus/callbacks/callbacks.h"
#include "chorus/models/history.h"
#include "chorus/models/progbar_logger.h"

namespace chorus::callbacks {
namespace {

TEST(BatchHooksTest, EpochLevelCallbacksDoNotAskForBatchLogs) {
  const std::vector<std::shared_ptr<models::Callback>> epoch_level = {
      std::make_shared<models::History>(),
      std::make_shared<EarlyStopping>(),
      std::make_shared<ReduceLROnPlateau>(),
      std::make_shared<CSVLogger>("log.csv"),
      std::make_shared<LearningRateScheduler>([](int, double lr) { return lr; }),
      std::make_shared<ModelCheckpoint>("ckpt-{epoch}.keras"),
      std::make_shared<LambdaCallback>(LambdaCallbackFunctions{.on_epoch_end = [](int, const models::Logs&) {}}),
  };
  for (size_t i = 0; i < epoch_level.size(); ++i) {
    EXPECT_FALSE(epoch_level[i]->implements_train_batch_hooks()) << i;
    EXPECT_FALSE(epoch_level[i]->implements_test_batch_hooks()) << i;
  }
}

TEST(BatchHooksTest, CallbacksThatReadBatchLogsAskForThem) {
  EXPECT_TRUE(TerminateOnNaN().implements_train_batch_hooks());
  EXPECT_TRUE(ModelCheckpoint("ckpt-{batch}.keras", {.save_freq = 5}).implements_train_batch_hooks());
  const LambdaCallback train_batches({.on_train_batch_end = [](int64_t, const models::Logs&) {}});
  EXPECT_TRUE(train_batches.implements_train_batch_hooks());
  EXPECT_FALSE(train_batches.implements_test_batch_hooks());
  const LambdaCallback test_batches({.on_test_batch_begin = [](int64_t, const models::Logs&) {}});
  EXPECT_FALSE(test_batches.implements_train_batch_hooks());
  EXPECT_TRUE(test_batches.implements_test_batch_hooks());
  // A user's callback that does not say is assumed to read them.
  struct Custom : models::Callback {};
  EXPECT_TRUE(Custom().implements_train_batch_hooks());
}

TEST(BatchHooksTest, TheProgressBarReadsBatchLogsOnlyWhenItRedrawsAtVerboseOne) {
  std::ostringstream out;
  models::ProgbarLogger terminal({.out = &out, .interactive = true});
  terminal.set_params({.epochs = 2, .steps = 10, .verbose = 1});
  EXPECT_TRUE(terminal.implements_train_batch_hooks());
  EXPECT_TRUE(terminal.implements_test_batch_hooks());
  terminal.set_params({.epochs = 2, .steps = 10, .verbose = 2});
  EXPECT_FALSE(terminal.implements_train_batch_hooks());
  EXPECT_FALSE(terminal.implements_test_batch_hooks());
  // Off a terminal verbose 1 writes each epoch's final line only.
  models::ProgbarLogger piped({.out = &out, .interactive = false});
  piped.set_params({.epochs = 2, .steps = 10, .verbose = 1});
  EXPECT_FALSE(piped.implements_train_batch_hooks());
  EXPECT_FALSE(piped.implements_test_batch_hooks());
}

}  // namespace
}  // namespace chorus::callbacks
