#include "chorus/callbacks/learning_rate_scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "tests/callbacks/callback_test_util.h"
#include "tests/testing/test_names.h"

namespace chorus::callbacks {
namespace {

using namespace testing::test_names;

// A schedule the test can name: half the step count.
struct HalfStep : optimizers::LearningRateSchedule {
  double operator()(int64_t step) const override { return 0.5 * static_cast<double>(step); }
  nlohmann::json get_config() const override { return {{"class_name", "HalfStep"}, {"config", nlohmann::json::object()}}; }
};

TEST(LearningRateSchedulerTest, SetsTheRateAtEachEpochBegin) {
  auto model = testing::linear_model(0.1);
  std::vector<std::pair<int, double>> seen;
  LearningRateScheduler callback([&](int epoch, double lr) {
    seen.emplace_back(epoch, lr);
    return epoch < 1 ? lr : lr * 0.5;
  });
  callback.set_model(model.get());
  for (int epoch = 0; epoch < 3; ++epoch) callback.on_epoch_begin(epoch, {});
  EXPECT_EQ(seen, (std::vector<std::pair<int, double>>{{0, 0.1}, {1, 0.1}, {2, 0.05}}));
  EXPECT_EQ(model->optimizer().learning_rate(), 0.025);
}

TEST(LearningRateSchedulerTest, VerboseMessage) {
  auto model = testing::linear_model(0.1);
  LearningRateScheduler callback([](int, double) { return 0.01; }, /*verbose=*/1);
  callback.set_model(model.get());
  ::testing::internal::CaptureStdout();
  callback.on_epoch_begin(2, {});
  callback.on_epoch_begin(3, {});
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "\nEpoch 3: LearningRateScheduler setting learning rate to 0.01.\n"
            "\nEpoch 4: LearningRateScheduler setting learning rate to 0.01.\n");
}

TEST(LearningRateSchedulerTest, Errors) {
  EXPECT_THAT([] { LearningRateScheduler(nullptr); },
              ThrowsMessage<ValueError>(HasSubstr("LearningRateScheduler: expected a schedule function, got an empty one")));
  auto model = testing::linear_model(optimizers::LearningRate(HalfStep{}));
  LearningRateScheduler callback([](int, double lr) { return lr; });
  callback.set_model(model.get());
  EXPECT_THAT([&] { callback.on_epoch_begin(0, {}); },
              ThrowsMessage<ValueError>(HasSubstr("cannot set the learning rate: it is a schedule")));
}

}  // namespace
}  // namespace chorus::callbacks
