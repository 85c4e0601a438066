// RMSprop against Keras's update rule written out in double: plain, momentum, centered.

#include "chorus/optimizers/rmsprop.h"

#include <cmath>

#include "tests/optimizers/optimizer_test_util.h"

namespace chorus::optimizers {
namespace {

using testing::expect_matches_reference;
using testing::Values;

// Keras's RMSprop.update_step.
testing::ReferenceStep rmsprop_reference(double rho, double momentum, double epsilon, bool centered) {
  struct State {
    Values velocity, momentum, average;
  };
  auto s = std::make_shared<State>();
  return [=](Values& var, const Values& g, int64_t, double lr) {
    if (s->velocity.empty()) s->velocity = s->momentum = s->average = Values(var.size(), 0.0);
    for (size_t i = 0; i < var.size(); ++i) {
      s->velocity[i] = rho * s->velocity[i] + (1 - rho) * g[i] * g[i];
      double denominator = s->velocity[i] + epsilon;
      if (centered) {
        s->average[i] = rho * s->average[i] + (1 - rho) * g[i];
        denominator = s->velocity[i] - s->average[i] * s->average[i] + epsilon;
      }
      const double increment = lr * g[i] / std::sqrt(denominator);
      if (momentum > 0) {
        s->momentum[i] = momentum * s->momentum[i] + increment;
        var[i] -= s->momentum[i];
      } else {
        var[i] -= increment;
      }
    }
  };
}

TEST(RMSpropTest, MatchesKeras) {
  for (const int64_t n : testing::test_sizes()) {
    RMSprop rmsprop(0.01);
    expect_matches_reference(rmsprop, rmsprop_reference(0.9, 0, 1e-7, false), n);
  }
}

TEST(RMSpropTest, MomentumMatchesKeras) {
  for (const int64_t n : testing::test_sizes()) {
    RMSprop rmsprop({.learning_rate = 0.01, .rho = 0.8, .momentum = 0.5});
    expect_matches_reference(rmsprop, rmsprop_reference(0.8, 0.5, 1e-7, false), n);
  }
}

TEST(RMSpropTest, CenteredMatchesKeras) {
  for (const int64_t n : testing::test_sizes()) {
    RMSprop rmsprop({.learning_rate = 0.01, .epsilon = 1e-3, .centered = true});
    // The centred denominator is a difference of nearly equal numbers: looser tolerance.
    expect_matches_reference(rmsprop, rmsprop_reference(0.9, 0, 1e-3, true), n, 3, 1e-4, 1e-5);
  }
}

TEST(RMSpropTest, CenteredWithMomentumMatchesKeras) {
  RMSprop rmsprop({.learning_rate = 0.01, .momentum = 0.9, .epsilon = 1e-3, .centered = true});
  expect_matches_reference(rmsprop, rmsprop_reference(0.9, 0.9, 1e-3, true), 1023, 3, 1e-4, 1e-5);
}

TEST(RMSpropTest, KerasDefaultsAndSlots) {
  RMSprop rmsprop;
  EXPECT_EQ(rmsprop.name(), "rmsprop");
  EXPECT_DOUBLE_EQ(rmsprop.learning_rate(), 0.001);
  EXPECT_EQ(rmsprop.rho(), 0.9);
  EXPECT_EQ(rmsprop.momentum(), 0.0);
  EXPECT_EQ(rmsprop.epsilon(), 1e-7);
  EXPECT_FALSE(rmsprop.centered());

  RMSprop full({.momentum = 0.9, .centered = true});
  const autograd::Variable w = testing::variable_of("w", {1, 2}, {2});
  full.build(std::vector<autograd::Variable>{w});
  std::vector<std::string> paths;
  for (const auto& v : full.variables()) paths.push_back(v.path());
  EXPECT_THAT(paths, ::testing::ElementsAre("optimizer/iterations", "optimizer/w/velocity", "optimizer/w/momentum",
                                            "optimizer/w/average_gradient"));
}

}  // namespace
}  // namespace chorus::optimizers
