// Adagrad against Keras's update rule written out in double.

#include "chorus/optimizers/adagrad.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "chorus/optimizers/update_kernels.h"

#include "tests/optimizers/optimizer_test_util.h"
#include "tests/testing/test_names.h"

namespace chorus::optimizers {
namespace {

using namespace testing::test_names;
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

TEST(AdagradTest, AnEmbeddingGradientLeavesUntouchedRowsAsTheyWereBitForBit) {
  // (64, 32) table; the gradient is zero but in rows 3 and 10 (10 holding a NaN), as
  // take's backward makes it. Adagrad skips the zero rows; the result must be the dense
  // update's, bit for bit, and the untouched rows' accumulators stay at their start.
  const Values start = testing::random_values(64 * 32, 17);
  std::vector<float> g(64 * 32, 0.0f);
  for (int j = 0; j < 32; ++j) {
    g[3 * 32 + j] = 0.01f * static_cast<float>(j + 1);
    g[10 * 32 + j] = -0.02f;
  }
  g[10 * 32 + 7] = std::numeric_limits<float>::quiet_NaN();
  const Tensor grad = from_values<float>(g, {64, 32});
  const autograd::Variable w = testing::variable_of("embedding/embeddings", start, {64, 32});
  Adagrad adagrad(0.2);
  std::vector<float> var = w.value().to_vector<float>(), acc(64 * 32, 0.1f);
  for (int step = 0; step < 2; ++step) {
    adagrad.apply_gradients(std::vector<Tensor>{grad}, std::vector<autograd::Variable>{w});
    kernels::adagrad({var.data(), acc.data(), g.data(), 0.2f, 1e-7f, /*skip_zero_pieces=*/false}, 64 * 32);
  }
  const std::vector<float> got_var = w.value().to_vector<float>();
  const std::vector<float> got_acc = adagrad.variables()[1].value().to_vector<float>();
  EXPECT_EQ(std::memcmp(got_var.data(), var.data(), var.size() * 4), 0);
  EXPECT_EQ(std::memcmp(got_acc.data(), acc.data(), acc.size() * 4), 0);
  EXPECT_EQ(got_acc[0], 0.1f);
  EXPECT_EQ(got_var[0], static_cast<float>(start[0]));
  EXPECT_TRUE(std::isnan(got_var[10 * 32 + 7]));
  EXPECT_NE(got_var[3 * 32], static_cast<float>(start[3 * 32]));
}

TEST(AdagradTest, NegativeZeroInitialAccumulatorStartsAtPositiveZero) {
  // Zero-gradient pieces are skipped only because no accumulator is ever -0 (acc + 0
  // would turn it into +0).
  EXPECT_FALSE(std::signbit(Adagrad({.initial_accumulator_value = -0.0}).initial_accumulator_value()));
}

TEST(AdagradTest, RejectsNegativeInitialAccumulator) {
  EXPECT_THAT([] { Adagrad({.initial_accumulator_value = -1}); },
              ThrowsMessage<ValueError>(HasSubstr("adagrad: expected initial_accumulator_value >= 0, got -1")));
}

}  // namespace
}  // namespace chorus::optimizers
