// Adagrad against Keras's update rule written out in double.

#include "chorus/optimizers/adagrad.h"

#include <cmath>

#include "tests/optimizers/optimizer_test_util.h"

namespace chorus::optimizers {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using testing::expect_matches_reference;
using testing::Values;

// Keras: acc += g^2; var -= lr * g / sqrt(acc + epsilon).
testing::ReferenceStep adagrad_reference(double initial, double epsilon) {
  auto acc = std::make_shared<Values>();
  return [=](Values& var, const Values& g, int64_t, double lr) {
    if (acc->empty()) acc->assign(var.size(), initial);
    for (size_t i = 0; i < var.size(); ++i) {
      (*acc)[i] += g[i] * g[i];
      var[i] -= lr * g[i] / std::sqrt((*acc)[i] + epsilon);
    }
  };
}

TEST(AdagradTest, MatchesKeras) {
  for (const int64_t n : testing::test_sizes()) {
    Adagrad adagrad(0.2);  // the retrieval tutorial's optimizer
    expect_matches_reference(adagrad, adagrad_reference(0.1, 1e-7), n);
  }
}

TEST(AdagradTest, CustomAccumulatorMatchesKeras) {
  Adagrad adagrad({.learning_rate = 0.05, .initial_accumulator_value = 0.0, .epsilon = 1e-3});
  expect_matches_reference(adagrad, adagrad_reference(0.0, 1e-3), 17, /*steps=*/4);
}

TEST(AdagradTest, KerasDefaultsAndSlots) {
  Adagrad adagrad;
  EXPECT_EQ(adagrad.name(), "adagrad");
  EXPECT_DOUBLE_EQ(adagrad.learning_rate(), 0.001);
  EXPECT_EQ(adagrad.initial_accumulator_value(), 0.1);
  EXPECT_EQ(adagrad.epsilon(), 1e-7);
  const autograd::Variable w = testing::variable_of("embedding/embeddings", {1, 2, 3}, {3});
  adagrad.build(std::vector<autograd::Variable>{w});
  ASSERT_EQ(adagrad.variables().size(), 2u);
  EXPECT_EQ(adagrad.variables()[1].path(), "optimizer/embedding/embeddings/accumulator");
  EXPECT_EQ(adagrad.variables()[1].value().to_vector<float>(), std::vector<float>(3, 0.1f));
}

TEST(AdagradTest, RejectsNegativeInitialAccumulator) {
  EXPECT_THAT([] { Adagrad({.initial_accumulator_value = -1}); },
              ThrowsMessage<ValueError>(HasSubstr("adagrad: expected initial_accumulator_value >= 0, got -1")));
}

}  // namespace
}  // namespace chorus::optimizers
