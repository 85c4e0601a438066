// The lines workers compare at start-up: weights in order with shapes and dtypes, the
// global batch and the optimizer; a different layer width or optimizer changes them.
#include "chorus/models/training_signature.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/models/model_test_util.h"

namespace chorus::models {
namespace {

TEST(TrainingSignatureTest, ListsWeightsBatchAndOptimizer) {
  layers::Layer::reset_names();
  auto model = testing::small_mlp(4, 8, 3);
  model->compile({.optimizer = optimizers::Adam(0.01), .loss = "mse"});
  const auto lines = training_signature(*model, 64);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0], "dense/kernel (4, 8) float32");
  EXPECT_EQ(lines[3], "dense_1/bias (3,) float32");
  EXPECT_EQ(lines[4], "global_batch_size 64");
  EXPECT_THAT(lines[5], ::testing::HasSubstr("\"learning_rate\":0.01"));
  auto wider = testing::small_mlp(4, 9, 3);
  wider->compile({.optimizer = optimizers::Adam(0.01), .loss = "mse"});
  EXPECT_NE(training_signature(*wider, 64)[0].substr(lines[0].find(' ')), lines[0].substr(lines[0].find(' ')));
  auto sgd = testing::small_mlp(4, 8, 3);
  sgd->compile({.optimizer = "sgd", .loss = "mse"});
  EXPECT_NE(training_signature(*sgd, 64)[5], lines[5]);
}

}  // namespace
}  // namespace chorus::models
