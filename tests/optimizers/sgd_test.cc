// SGD against Keras's update rules written out in double: plain, momentum, Nesterov.

#include "chorus/optimizers/sgd.h"

#include "tests/optimizers/optimizer_test_util.h"
#include "tests/testing/test_names.h"

namespace chorus::optimizers {
namespace {

using namespace testing::test_names;
using testing::expect_matches_reference;
using testing::Values;

// Keras: m = m * momentum - g * lr; var += m (Nesterov: var += m * momentum - g * lr).
testing::ReferenceStep sgd_reference(double momentum, bool nesterov) {
  auto m = std::make_shared<Values>();
  return [=](Values& var, const Values& g, int64_t, double lr) {
    if (m->empty()) m->assign(var.size(), 0.0);
    for (size_t i = 0; i < var.size(); ++i) {
      if (momentum == 0) {
        var[i] -= g[i] * lr;
        continue;
      }
      (*m)[i] = (*m)[i] * momentum - g[i] * lr;
      var[i] += nesterov ? (*m)[i] * momentum - g[i] * lr : (*m)[i];
    }
  };
}

TEST(SGDTest, PlainMatchesKeras) {
  for (const int64_t n : testing::test_sizes()) {
    SGD sgd(0.1);
    expect_matches_reference(sgd, sgd_reference(0, false), n);
  }
}

TEST(SGDTest, MomentumMatchesKeras) {
  for (const int64_t n : testing::test_sizes()) {
    SGD sgd({.learning_rate = 0.05, .momentum = 0.9});
    expect_matches_reference(sgd, sgd_reference(0.9, false), n);
  }
}

TEST(SGDTest, NesterovMatchesKeras) {
  for (const int64_t n : testing::test_sizes()) {
    SGD sgd({.learning_rate = 0.05, .momentum = 0.8, .nesterov = true});
    expect_matches_reference(sgd, sgd_reference(0.8, true), n);
  }
}

TEST(SGDTest, KerasDefaultsAndSlots) {
  SGD sgd;
  EXPECT_EQ(sgd.name(), "sgd");
  EXPECT_EQ(sgd.class_name(), "SGD");
  EXPECT_DOUBLE_EQ(sgd.learning_rate(), 0.01);
  EXPECT_EQ(sgd.momentum(), 0.0);
  EXPECT_FALSE(sgd.nesterov());
  const autograd::Variable w = testing::variable_of("dense/kernel", {1, 2}, {2});
  sgd.build(std::vector<autograd::Variable>{w});
  EXPECT_EQ(sgd.variables().size(), 1u);  // no momentum slot without momentum

  SGD with_momentum({.momentum = 0.5});
  with_momentum.build(std::vector<autograd::Variable>{w});
  ASSERT_EQ(with_momentum.variables().size(), 2u);
  EXPECT_EQ(with_momentum.variables()[1].path(), "optimizer/dense/kernel/momentum");
}

TEST(SGDTest, RejectsMomentumOutsideUnitInterval) {
  EXPECT_THAT([] { SGD({.momentum = 1.5}); }, ThrowsMessage<ValueError>(HasSubstr("sgd: expected momentum in [0, 1], got 1.5")));
  EXPECT_THAT([] { SGD({.momentum = -0.1}); }, ThrowsMessage<ValueError>(HasSubstr("got -0.1")));
}

}  // namespace
}  // namespace chorus::optimizers
