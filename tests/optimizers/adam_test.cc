// Adam and AdamW against Keras's update rule written out in double.

#include "chorus/optimizers/adam.h"

#include <cmath>

#include "chorus/optimizers/adamw.h"
#include "tests/optimizers/optimizer_test_util.h"

namespace chorus::optimizers {
namespace {

using testing::expect_matches_reference;
using testing::Values;

// Keras's Adam.update_step, optionally after Keras's decoupled weight decay.
testing::ReferenceStep adam_reference(double beta_1, double beta_2, double epsilon, bool amsgrad,
                                      double weight_decay = 0) {
  struct State {
    Values m, v, v_hat;
  };
  auto s = std::make_shared<State>();
  return [=](Values& var, const Values& g, int64_t step, double lr) {
    if (s->m.empty()) s->m = s->v = s->v_hat = Values(var.size(), 0.0);
    const double t = static_cast<double>(step);
    const double alpha = lr * std::sqrt(1 - std::pow(beta_2, t)) / (1 - std::pow(beta_1, t));
    for (size_t i = 0; i < var.size(); ++i) {
      var[i] -= var[i] * weight_decay * lr;
      s->m[i] += (g[i] - s->m[i]) * (1 - beta_1);
      s->v[i] += (g[i] * g[i] - s->v[i]) * (1 - beta_2);
      double v = s->v[i];
      if (amsgrad) v = s->v_hat[i] = std::max(s->v_hat[i], s->v[i]);
      var[i] -= s->m[i] * alpha / (std::sqrt(v) + epsilon);
    }
  };
}

TEST(AdamTest, MatchesKeras) {
  for (const int64_t n : testing::test_sizes()) {
    Adam adam(0.01);
    expect_matches_reference(adam, adam_reference(0.9, 0.999, 1e-7, false), n);
  }
}

TEST(AdamTest, CustomBetasMatchKeras) {
  Adam adam({.learning_rate = 0.02, .beta_1 = 0.5, .beta_2 = 0.75, .epsilon = 1e-3});
  expect_matches_reference(adam, adam_reference(0.5, 0.75, 1e-3, false), 33, /*steps=*/5);
}

TEST(AdamTest, AmsgradMatchesKeras) {
  for (const int64_t n : testing::test_sizes()) {
    Adam adam({.learning_rate = 0.01, .beta_2 = 0.5, .amsgrad = true});
    expect_matches_reference(adam, adam_reference(0.9, 0.5, 1e-7, true), n, /*steps=*/4);
  }
}

TEST(AdamTest, KerasDefaultsAndSlots) {
  Adam adam;
  EXPECT_EQ(adam.name(), "adam");
  EXPECT_DOUBLE_EQ(adam.learning_rate(), 0.001);
  EXPECT_EQ(adam.beta_1(), 0.9);
  EXPECT_EQ(adam.beta_2(), 0.999);
  EXPECT_EQ(adam.epsilon(), 1e-7);
  EXPECT_FALSE(adam.amsgrad());
  const autograd::Variable w = testing::variable_of("dense/kernel", {1, 2, 3, 4, 5, 6}, {2, 3});
  const autograd::Variable b = testing::variable_of("dense/bias", {1, 2, 3}, {3});
  adam.build(std::vector<autograd::Variable>{w, b});
  std::vector<std::string> paths;
  for (const auto& v : adam.variables()) paths.push_back(v.path());
  EXPECT_THAT(paths, ::testing::ElementsAre("optimizer/iterations", "optimizer/dense/kernel/momentum",
                                            "optimizer/dense/kernel/velocity", "optimizer/dense/bias/momentum",
                                            "optimizer/dense/bias/velocity"));
  EXPECT_EQ(adam.variables()[1].shape(), Shape({2, 3}));
  EXPECT_FALSE(adam.variables()[1].trainable());

  Adam ams({.amsgrad = true});
  ams.build(std::vector<autograd::Variable>{b});
  EXPECT_EQ(ams.variables().back().path(), "optimizer/dense/bias/velocity_hat");
}

TEST(AdamWTest, MatchesKerasWithDecoupledDecay) {
  for (const int64_t n : testing::test_sizes()) {
    AdamW adamw({.learning_rate = 0.01, .weight_decay = 0.1});
    expect_matches_reference(adamw, adam_reference(0.9, 0.999, 1e-7, false, 0.1), n);
  }
}

TEST(AdamWTest, KerasDefaults) {
  AdamW adamw;
  EXPECT_EQ(adamw.name(), "adamw");
  EXPECT_EQ(adamw.class_name(), "AdamW");
  EXPECT_DOUBLE_EQ(adamw.learning_rate(), 0.001);
  EXPECT_EQ(adamw.get_config()["weight_decay"], 0.004);
  AdamW adamw_default_decay(0.01);
  expect_matches_reference(adamw_default_decay, adam_reference(0.9, 0.999, 1e-7, false, 0.004), 9);
}

}  // namespace
}  // namespace chorus::optimizers
