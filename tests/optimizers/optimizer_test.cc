// The optimizer base: clipping, weight decay, skipped gradients, iterations, learning
// rates and schedules, state save/restore, and every documented error.

#include "chorus/optimizers/optimizer.h"

#include <cmath>
#include <set>

#include "chorus/autograd/tape.h"
#include "chorus/core/shared.h"
#include "chorus/optimizers/optimizers.h"
#include "tests/optimizers/optimizer_test_util.h"
#include "tests/testing/registry_coverage.h"
#include "tests/testing/test_names.h"

namespace chorus::optimizers {
namespace {

using autograd::Variable;
using namespace testing::test_names;
using testing::values_of;
using testing::variable_of;
using Vars = std::vector<Variable>;
using Grads = std::vector<Tensor>;

void expect_values_near(const Tensor& actual, const testing::Values& expected, double tol = 1e-6) {
  const auto v = values_of(actual);
  ASSERT_EQ(v.size(), expected.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], expected[i], tol) << "element " << i;
}

TEST(OptimizerTest, ClipnormClipsEachGradientOnItsOwn) {
  SGD sgd({.learning_rate = 1.0, .clipnorm = 1.0});
  const Variable a = variable_of("a", {0, 0}, {2}), b = variable_of("b", {0, 0}, {2});
  const Tensor ga = tensor_of({3, 4}, {2}), gb = tensor_of({0.3, 0.4}, {2});  // norms 5 and 0.5
  sgd.apply_gradients(Grads{ga, gb}, Vars{a, b});
  expect_values_near(a.value(), {-0.6, -0.8});
  expect_values_near(b.value(), {-0.3, -0.4});
  expect_values_near(ga, {3, 4});  // the caller's gradient is not modified
}

TEST(OptimizerTest, GlobalClipnormScalesAllGradientsTogether) {
  SGD sgd({.learning_rate = 1.0, .global_clipnorm = 1.0});
  const Variable a = variable_of("a", {0, 0}, {2}), b = variable_of("b", {0}, {1});
  sgd.apply_gradients(Grads{tensor_of({3, 4}, {2}), tensor_of({12}, {1})}, Vars{a, b});  // global norm 13
  expect_values_near(a.value(), {-3.0 / 13, -4.0 / 13});
  expect_values_near(b.value(), {-12.0 / 13});

  // Under the limit nothing changes.
  SGD loose({.learning_rate = 1.0, .global_clipnorm = 100.0});
  const Variable c = variable_of("c", {0, 0}, {2});
  loose.apply_gradients(Grads{tensor_of({3, 4}, {2})}, Vars{c});
  expect_values_near(c.value(), {-3, -4});
}

TEST(OptimizerTest, GlobalClipnormOfNonFiniteNormGivesNaN) {
  SGD sgd({.learning_rate = 1.0, .global_clipnorm = 1.0});
  const Variable a = variable_of("a", {0, 0}, {2});
  sgd.apply_gradients(Grads{tensor_of({INFINITY, 1}, {2})}, Vars{a});
  for (const double v : values_of(a.value())) EXPECT_TRUE(std::isnan(v));
}

TEST(OptimizerTest, ClipvalueClipsEachElement) {
  SGD sgd({.learning_rate = 1.0, .clipvalue = 0.5});
  const Variable a = variable_of("a", {0, 0, 0, 0}, {4});
  sgd.apply_gradients(Grads{tensor_of({-2, -0.25, 0.25, 2}, {4})}, Vars{a});
  expect_values_near(a.value(), {0.5, 0.25, -0.25, -0.5});
}

TEST(OptimizerTest, ClippingAppliesAtEverySizeAndAcrossChunks) {
  const int64_t n = 40'001;  // several parallel chunks
  const testing::Values g = testing::random_values(n, 5, -3, 3);
  double norm = 0;
  for (const double x : g) norm += x * x;
  norm = std::sqrt(norm);
  SGD sgd({.learning_rate = 1.0, .clipnorm = 2.0});
  const Variable a = variable_of("a", testing::Values(n, 0.0), {n});
  sgd.apply_gradients(Grads{tensor_of(g, {n})}, Vars{a});
  testing::Values expected(g.size());
  for (size_t i = 0; i < g.size(); ++i) expected[i] = -g[i] * 2.0 / norm;
  expect_values_near(a.value(), expected, 1e-7);
}

TEST(OptimizerTest, WeightDecayIsDecoupledAndAppliedBeforeTheStep) {
  SGD sgd({.learning_rate = 0.1, .weight_decay = 0.5});
  const Variable a = variable_of("a", {1, -2}, {2});
  sgd.apply_gradients(Grads{tensor_of({1, 1}, {2})}, Vars{a});
  // Keras: var -= var * wd * lr, then var -= lr * g.
  expect_values_near(a.value(), {1 - 1 * 0.05 - 0.1, -2 + 2 * 0.05 - 0.1});
}

TEST(OptimizerTest, WeightDecaySkipsNonTrainableVariables) {
  SGD sgd({.learning_rate = 0.1, .weight_decay = 0.5});
  const Variable frozen("frozen", tensor_of({1, -2}, {2}), /*trainable=*/false);
  sgd.apply_gradients(Grads{tensor_of({1, 1}, {2})}, Vars{frozen});
  expect_values_near(frozen.value(), {1 - 0.1, -2 - 0.1});
}

TEST(OptimizerTest, UndefinedGradientsLeaveTheirVariablesAlone) {
  Adam adam(0.1);
  const Variable a = variable_of("a", {1, 2}, {2}), b = variable_of("b", {3}, {1});
  adam.apply_gradients(Grads{Tensor(), tensor_of({1}, {1})}, Vars{a, b});
  expect_values_near(a.value(), {1, 2});
  EXPECT_NE(values_of(b.value())[0], 3.0);
  EXPECT_EQ(adam.iterations(), 1);
  // a's slots stay zero.
  expect_values_near(adam.variables()[1].value(), {0, 0});
}

TEST(OptimizerTest, VariablesMayComeInAnotherOrderOrAsASubset) {
  const testing::Values ga = {0.5, -1}, gb = {2};
  Adam in_order(0.1), reordered(0.1);
  const Variable a1 = variable_of("a", {1, 2}, {2}), b1 = variable_of("b", {3}, {1});
  const Variable a2 = variable_of("a", {1, 2}, {2}), b2 = variable_of("b", {3}, {1});
  in_order.build(Vars{a1, b1});
  reordered.build(Vars{a2, b2});
  for (int step = 0; step < 2; ++step) {
    in_order.apply_gradients(Grads{tensor_of(ga, {2}), tensor_of(gb, {1})}, Vars{a1, b1});
    reordered.apply_gradients(Grads{tensor_of(gb, {1}), tensor_of(ga, {2})}, Vars{b2, a2});
  }
  EXPECT_EQ(a1.value().to_vector<float>(), a2.value().to_vector<float>());
  EXPECT_EQ(b1.value().to_vector<float>(), b2.value().to_vector<float>());
  reordered.apply_gradients(Grads{tensor_of(gb, {1})}, Vars{b2});  // a subset
  EXPECT_EQ(reordered.iterations(), 3);
}

TEST(OptimizerTest, ApplyGradientsDoesNotRecordOnATape) {
  SGD sgd(0.1);
  const Variable a = variable_of("a", {1, 2}, {2});
  autograd::GradientTape tape;
  sgd.apply_gradients(Grads{tensor_of({1, 1}, {2})}, Vars{a});
  EXPECT_EQ(a.value().impl()->autograd.tape_id, 0u);
  expect_values_near(a.value(), {0.9, 1.9});
}

TEST(OptimizerTest, ScheduleIsEvaluatedAtTheIterationCount) {
  // staircase: 0.1 for steps 0-1, 0.05 for 2-3, 0.025 for 4-5.
  SGD sgd(schedules::ExponentialDecay(0.1, 2, 0.5, /*staircase=*/true));
  const Variable a = variable_of("a", {0}, {1});
  const std::vector<double> expected_lr = {0.1, 0.1, 0.05, 0.05, 0.025};
  double expected_value = 0;
  for (size_t step = 0; step < expected_lr.size(); ++step) {
    EXPECT_EQ(sgd.iterations(), static_cast<int64_t>(step));
    EXPECT_DOUBLE_EQ(sgd.learning_rate(), expected_lr[step]);
    sgd.apply_gradients(Grads{tensor_of({1}, {1})}, Vars{a});
    expected_value -= expected_lr[step];
    expect_values_near(a.value(), {expected_value});
  }
}

TEST(OptimizerTest, WeightDecayUsesTheScheduledRate) {
  AdamW adamw({.learning_rate = schedules::PiecewiseConstantDecay({0}, {0.1, 0.01}), .weight_decay = 0.5});
  const Variable a = variable_of("a", {2}, {1});
  adamw.apply_gradients(Grads{tensor_of({0}, {1})}, Vars{a});  // zero gradient: only the decay moves it
  expect_values_near(a.value(), {2 - 2 * 0.5 * 0.1});
  adamw.apply_gradients(Grads{tensor_of({0}, {1})}, Vars{a});
  expect_values_near(a.value(), {1.9 - 1.9 * 0.5 * 0.01});
}

TEST(OptimizerTest, SetLearningRate) {
  Adam adam(0.1);
  adam.set_learning_rate(0.5);
  EXPECT_EQ(adam.learning_rate(), 0.5);
  EXPECT_EQ(adam.get_config()["learning_rate"], 0.5);
  Adam scheduled(schedules::ExponentialDecay(0.1, 10, 0.9));
  EXPECT_THAT([&] { scheduled.set_learning_rate(0.5); },
              ThrowsMessage<ValueError>(HasSubstr("adam: cannot set the learning rate: it is a schedule (ExponentialDecay)")));
}

// Saves the state after three steps, restores it into a fresh optimizer and fresh
// variables, and checks the fourth step is the same bit for bit.
template <class Make>
void expect_restore_is_exact(Make make) {
  auto original = make();
  const Variable w = variable_of("dense/kernel", testing::random_values(1023, 3), {1023});
  const Variable b = variable_of("dense/bias", testing::random_values(7, 4), {7});
  auto grads = [](int step) {
    return Grads{tensor_of(testing::random_values(1023, 10 + step, -2, 2), {1023}),
                 tensor_of(testing::random_values(7, 20 + step, -2, 2), {7})};
  };
  for (int step = 0; step < 3; ++step) original.apply_gradients(grads(step), Vars{w, b});

  std::vector<Tensor> saved;
  for (const Variable& v : original.variables()) saved.push_back(v.value().clone());
  const Variable w2("dense/kernel", w.value().clone()), b2("dense/bias", b.value().clone());
  auto restored = make();
  restored.build(Vars{w2, b2});
  const std::vector<Variable> state = restored.variables();
  ASSERT_EQ(state.size(), saved.size());
  for (size_t i = 0; i < state.size(); ++i) {
    EXPECT_EQ(state[i].path(), original.variables()[i].path());
    state[i].assign(saved[i]);
  }
  EXPECT_EQ(restored.iterations(), 3);

  original.apply_gradients(grads(3), Vars{w, b});
  restored.apply_gradients(grads(3), Vars{w2, b2});
  EXPECT_EQ(values_of(w.value()), values_of(w2.value())) << original.name();
  EXPECT_EQ(values_of(b.value()), values_of(b2.value())) << original.name();
  for (size_t i = 0; i < state.size(); ++i) {
    EXPECT_EQ(values_of(original.variables()[i].value()), values_of(state[i].value()))
        << state[i].path();
  }
}

TEST(OptimizerTest, RestoredStateContinuesBitForBit) {
  expect_restore_is_exact([] { return SGD({.learning_rate = 0.1, .momentum = 0.9, .nesterov = true}); });
  expect_restore_is_exact([] { return Adam({.learning_rate = schedules::CosineDecay(0.01, 10), .amsgrad = true}); });
  expect_restore_is_exact([] { return AdamW(0.01); });
  expect_restore_is_exact([] { return Adagrad(0.2); });
  expect_restore_is_exact([] { return RMSprop({.momentum = 0.5, .centered = true}); });
}

TEST(OptimizerTest, FromNameKnowsKerasNames) {
  EXPECT_EQ(Optimizer::from_name("sgd")->class_name(), "SGD");
  EXPECT_EQ(Optimizer::from_name("adam")->class_name(), "Adam");
  EXPECT_EQ(Optimizer::from_name("adamw")->class_name(), "AdamW");
  EXPECT_EQ(Optimizer::from_name("adagrad")->class_name(), "Adagrad");
  EXPECT_EQ(Optimizer::from_name("rmsprop")->class_name(), "RMSprop");
  EXPECT_EQ(Optimizer::from_name("RMSprop")->name(), "rmsprop");  // class names work too
  EXPECT_DOUBLE_EQ(Optimizer::from_name("sgd")->learning_rate(), 0.01);
  EXPECT_THAT([] { Optimizer::from_name("adamax"); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "unknown optimizer 'adamax': expected one of sgd, adam, adamw, adagrad, rmsprop")));
}

TEST(OptimizerTest, SharedHandleTakesAnOptimizerOrAName) {
  Shared<Optimizer> by_value = Adagrad(0.2);
  EXPECT_EQ(by_value->name(), "adagrad");
  EXPECT_DOUBLE_EQ(by_value->learning_rate(), 0.2);
  Shared<Optimizer> by_name = "adam";
  EXPECT_EQ(by_name->class_name(), "Adam");
}

// to_config -> from_config -> to_config is the identity, and both optimizers step alike.
// Returns the class name, so the test can check that every registered class has a case.
std::string expect_config_round_trip(const Optimizer& optimizer) {
  const nlohmann::json config = optimizer.to_config();
  const std::shared_ptr<Optimizer> copy = Optimizer::from_config(config);
  EXPECT_EQ(copy->to_config(), config);
  EXPECT_EQ(copy->class_name(), optimizer.class_name());
  return optimizer.class_name();
}

TEST(OptimizerTest, ConfigRoundTrips) {
  std::set<std::string> covered;
  covered.insert(expect_config_round_trip(SGD({.learning_rate = 0.3, .momentum = 0.5, .nesterov = true, .clipnorm = 2.0})));
  covered.insert(expect_config_round_trip(Adam({.learning_rate = schedules::PolynomialDecay(0.1, 100, 0.0, 2.0, true),
                                 .beta_1 = 0.8,
                                 .amsgrad = true,
                                 .global_clipnorm = 1.0})));
  covered.insert(expect_config_round_trip(AdamW({.learning_rate = 0.01, .weight_decay = 0.1, .clipvalue = 0.5})));
  covered.insert(expect_config_round_trip(
      Adagrad({.learning_rate = schedules::LinearWarmup(10, schedules::CosineDecay(0.2, 50)),
               .initial_accumulator_value = 0.2})));
  covered.insert(
      expect_config_round_trip(RMSprop({.rho = 0.7, .momentum = 0.1, .centered = true, .weight_decay = 0.01})));
  testing::expect_registry_covered(registered_optimizers(), covered, {"UserAdam"});
}

TEST(OptimizerTest, ConfigHasKerasKeys) {
  const nlohmann::json config = Adam({.learning_rate = 0.01}).to_config();
  EXPECT_EQ(config["class_name"], "Adam");
  const nlohmann::json expected = {{"name", "adam"},           {"learning_rate", 0.01}, {"weight_decay", nullptr},
                                   {"clipnorm", nullptr},      {"global_clipnorm", nullptr},
                                   {"clipvalue", nullptr},     {"beta_1", 0.9},         {"beta_2", 0.999},
                                   {"epsilon", 1e-7},          {"amsgrad", false}};
  EXPECT_EQ(config["config"], expected);
  EXPECT_EQ(Adam(schedules::ExponentialDecay(0.1, 10, 0.9)).get_config()["learning_rate"]["class_name"],
            "ExponentialDecay");
}

TEST(OptimizerTest, FromConfigReadsAConfigWrittenByKeras) {
  // keras.optimizers.Adam(learning_rate=0.01).get_config() in Keras 3.
  const nlohmann::json keras = nlohmann::json::parse(R"({"class_name": "Adam", "config": {
      "name": "adam", "learning_rate": 0.01, "weight_decay": null, "clipnorm": null,
      "global_clipnorm": null, "clipvalue": null, "use_ema": false, "ema_momentum": 0.99,
      "ema_overwrite_frequency": null, "loss_scale_factor": null,
      "gradient_accumulation_steps": null, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-07,
      "amsgrad": false}, "module": "keras.optimizers", "registered_name": null})");
  const auto adam = Optimizer::from_config(keras);
  EXPECT_EQ(adam->class_name(), "Adam");
  EXPECT_DOUBLE_EQ(adam->learning_rate(), 0.01);
}

TEST(OptimizerTest, FromConfigErrors) {
  EXPECT_THAT([] { Optimizer::from_config({{"class_name", "Nadam"}, {"config", nlohmann::json::object()}}); },
              ThrowsMessage<ValueError>(HasSubstr("Optimizer::from_config: unknown optimizer class 'Nadam'. Known classes: "
                                                  "Adagrad, Adam, AdamW, RMSprop, SGD")));
  EXPECT_THAT([] { Optimizer::from_config({{"config", nlohmann::json::object()}}); },
              ThrowsMessage<ValueError>(HasSubstr("Optimizer::from_config: config is missing 'class_name'")));
  EXPECT_THAT([] { Optimizer::from_config({{"class_name", "Adam"}, {"config", {{"beta1", 0.5}}}}); },
              ThrowsMessage<ValueError>(Eq("Adam: unexpected config key 'beta1' (did you mean 'beta_1'?)")));
  EXPECT_THAT([] { Optimizer::from_config({{"class_name", "Adagrad"}, {"config", {{"nesterov", true}}}}); },
              ThrowsMessage<ValueError>(Eq("Adagrad: unexpected config key 'nesterov'")));
  EXPECT_THAT([] { Optimizer::from_config({{"class_name", "SGD"}, {"config", {{"momentum", "high"}}}}); },
              ThrowsMessage<ValueError>(Eq("SGD: config key 'momentum': expected a number, got \"high\" (a string)")));
  // The base keys every optimizer shares are read by one helper, with the same checks.
  EXPECT_THAT([] { Optimizer::from_config({{"class_name", "RMSprop"}, {"config", {{"clipnorm", "one"}}}}); },
              ThrowsMessage<ValueError>(Eq("RMSprop: config key 'clipnorm': expected a number, got \"one\" (a string)")));
  EXPECT_THAT([] { Optimizer::from_config({{"class_name", "SGD"}, {"config", {{"global_clip_norm", 1.0}}}}); },
              ThrowsMessage<ValueError>(
                  Eq("SGD: unexpected config key 'global_clip_norm' (did you mean 'global_clipnorm'?)")));
  EXPECT_THAT([] { Optimizer::from_config({{"class_name", "Adam"}, {"config", {{"loss_scale_factor", 128}}}}); },
              ThrowsMessage<ValueError>(Eq("Adam: loss_scale_factor=128 is not supported")));
  EXPECT_THAT([] { Optimizer::from_config({{"class_name", "Adam"}, {"config", {{"use_ema", true}}}}); },
              ThrowsMessage<ValueError>(HasSubstr("Adam: use_ema=true is not supported")));
  EXPECT_THAT([] { Optimizer::from_config({{"class_name", "AdamW"}, {"config", {{"weight_decay", nullptr}}}}); },
              ThrowsMessage<ValueError>(HasSubstr("AdamW: expected weight_decay to be a number, got null")));
  EXPECT_THAT([] { Optimizer::from_config({{"class_name", "SGD"}, {"config", {{"learning_rate", -0.5}}}}); },
              ThrowsMessage<ValueError>(
                  HasSubstr("SGD: config key 'learning_rate': expected a learning rate >= 0, got -0.5")));
  EXPECT_EQ(Optimizer::from_config({{"class_name", "SGD"}, {"config", {{"learning_rate", 0}}}})->learning_rate(), 0);
}

TEST(OptimizerTest, OnlyOneClipOption) {
  EXPECT_THAT([] { Adam({.clipnorm = 1.0, .global_clipnorm = 1.0}); },
              ThrowsMessage<ValueError>(HasSubstr("adam: only one of clipnorm, clipvalue and global_clipnorm can be "
                                                  "set, got clipnorm=1, clipvalue=None, global_clipnorm=1")));
}

TEST(OptimizerTest, ApplyGradientsErrors) {
  Adam adam;
  const Variable a = variable_of("dense/kernel", {1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_THAT([&] { adam.apply_gradients(Grads{}, Vars{a}); },
              ThrowsMessage<ValueError>(HasSubstr("adam: got 0 gradients for 1 variables")));
  EXPECT_THAT([&] { adam.apply_gradients(Grads{tensor_of({1, 2, 3, 4, 5, 6}, {3, 2})}, Vars{a}); },
              ThrowsMessage<ShapeError>(HasSubstr(
                  "adam: the gradient for 'dense/kernel' has shape (3, 2), expected the variable's shape (2, 3)")));
  EXPECT_THAT([&] { adam.apply_gradients(Grads{zeros({2, 3}, kBFloat16)}, Vars{a}); },
              ThrowsMessage<DTypeError>(HasSubstr("adam: the gradient for 'dense/kernel' has dtype bfloat16, expected float32")));
  EXPECT_THAT([&] { adam.apply_gradients(Grads{Tensor()}, Vars{a}); },
              ThrowsMessage<ValueError>(HasSubstr("adam: no gradients provided for any variable")));
  const Variable stranger = variable_of("other/kernel", {1}, {1});
  EXPECT_THAT([&] { adam.apply_gradients(Grads{tensor_of({1}, {1})}, Vars{stranger}); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "adam: variable 'other/kernel' is not one of the 1 variables this optimizer was built with")));
  EXPECT_EQ(adam.iterations(), 0);  // failed calls take no step
}

TEST(OptimizerTest, BuildErrors) {
  const Variable a = variable_of("a", {1}, {1}), b = variable_of("b", {1}, {1});
  Adam adam;
  adam.build(Vars{a, b});
  adam.build(Vars{a, b});  // the same variables again: nothing to do
  EXPECT_THAT([&] { adam.build(Vars{a}); },
              ThrowsMessage<ValueError>(HasSubstr("adam: already built for 2 variables, got 1 other variables")));
  EXPECT_THAT([&] { Adam().build(Vars{a, a}); }, ThrowsMessage<ValueError>(HasSubstr("adam: variable 'a' is listed twice")));
  const Variable half("half/kernel", zeros({2}, kBFloat16));
  EXPECT_THAT([&] { SGD().build(Vars{half}); },
              ThrowsMessage<DTypeError>(HasSubstr(
                  "sgd: variable 'half/kernel' has dtype bfloat16: only float32 variables are supported")));
}

}  // namespace
}  // namespace chorus::optimizers
