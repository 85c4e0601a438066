#include "chorus/callbacks/terminate_on_nan.h"

#include <cmath>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "tests/callbacks/callback_test_util.h"
#include "tests/testing/test_names.h"

namespace chorus::callbacks {
namespace {

using models::Logs;
using namespace testing::test_names;

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(TerminateOnNaNTest, StopsTrainingOnANonFiniteLoss) {
  auto model = testing::linear_model();
  for (double bad : {std::nan(""), kInf, -kInf}) {
    TerminateOnNaN callback;
    callback.set_model(model.get());
    model->stop_training = false;
    ::testing::internal::CaptureStdout();
    callback.on_train_batch_end(2, {{"loss", 0.5}});
    callback.on_train_batch_end(3, {{"mse", bad}});  // not the loss
    EXPECT_FALSE(model->stop_training);
    callback.on_train_batch_end(3, {{"loss", bad}});
    EXPECT_EQ(::testing::internal::GetCapturedStdout(), "Batch 3: Invalid loss, terminating training\n");
    EXPECT_TRUE(model->stop_training);
  }
}

TEST(TerminateOnNaNTest, RaiseErrorThrowsAtOnce) {
  TerminateOnNaN callback({.raise_error = true});
  callback.on_train_batch_end(0, {{"loss", 1.0}});
  EXPECT_THAT([&] { callback.on_train_batch_end(4, {{"loss", -std::nan("")}}); },
              ThrowsMessage<Error>(HasSubstr("TerminateOnNaN: NaN or Inf loss encountered at batch 4. Loss value: nan. "
                                             "Terminating training immediately.")));
  EXPECT_THAT([&] { callback.on_train_batch_end(5, {{"loss", kInf}}); },
              ThrowsMessage<Error>(HasSubstr("at batch 5. Loss value: inf.")));
}

}  // namespace
}  // namespace chorus::callbacks
