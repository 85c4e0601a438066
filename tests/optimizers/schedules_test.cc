// Learning-rate schedules against Keras's formulas at several steps, their configs, and
// their errors.

#include "chorus/optimizers/schedules.h"

#include <cmath>
#include <numbers>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "tests/testing/registry_coverage.h"
#include "tests/testing/test_names.h"

namespace chorus::optimizers::schedules {
namespace {

using namespace testing::test_names;

TEST(ScheduleTest, ExponentialDecay) {
  const ExponentialDecay smooth(0.1, 10, 0.5);
  for (const int64_t step : {0, 1, 5, 10, 25, 1000}) {
    EXPECT_DOUBLE_EQ(smooth(step), 0.1 * std::pow(0.5, step / 10.0)) << step;
  }
  const ExponentialDecay stairs(0.1, 10, 0.5, /*staircase=*/true);
  EXPECT_DOUBLE_EQ(stairs(0), 0.1);
  EXPECT_DOUBLE_EQ(stairs(9), 0.1);
  EXPECT_DOUBLE_EQ(stairs(10), 0.05);
  EXPECT_DOUBLE_EQ(stairs(29), 0.025);
}

TEST(ScheduleTest, PolynomialDecay) {
  const PolynomialDecay linear(0.1, 100);  // end 1e-4, power 1
  EXPECT_DOUBLE_EQ(linear(0), 0.1);
  EXPECT_DOUBLE_EQ(linear(50), (0.1 - 1e-4) * 0.5 + 1e-4);
  EXPECT_DOUBLE_EQ(linear(100), 1e-4);
  EXPECT_DOUBLE_EQ(linear(250), 1e-4);  // stays at the end
  const PolynomialDecay sqrt_decay(0.1, 100, 0.01, 0.5);
  EXPECT_DOUBLE_EQ(sqrt_decay(75), 0.09 * std::sqrt(0.25) + 0.01);
}

TEST(ScheduleTest, PolynomialDecayCycles) {
  const PolynomialDecay cyclic(0.1, 100, 0.0, 1.0, /*cycle=*/true);
  EXPECT_DOUBLE_EQ(cyclic(0), 0.1);     // multiplier 1 at step 0
  EXPECT_DOUBLE_EQ(cyclic(50), 0.05);   // horizon 100
  EXPECT_DOUBLE_EQ(cyclic(100), 0.0);   // horizon still 100 (ceil(1) = 1)
  EXPECT_DOUBLE_EQ(cyclic(150), 0.1 * (1 - 150.0 / 200));  // horizon 200
  EXPECT_DOUBLE_EQ(cyclic(201), 0.1 * (1 - 201.0 / 300));  // horizon 300
}

TEST(ScheduleTest, CosineDecay) {
  const CosineDecay cosine(0.1, 100, 0.1);
  auto keras = [](double step) {
    step = std::min(step, 100.0);
    const double c = 0.5 * (1 + std::cos(std::numbers::pi * step / 100));
    return 0.1 * ((1 - 0.1) * c + 0.1);
  };
  for (const int64_t step : {0, 1, 50, 99, 100, 500}) EXPECT_DOUBLE_EQ(cosine(step), keras(step)) << step;
  EXPECT_DOUBLE_EQ(cosine(100), 0.01);
}

TEST(ScheduleTest, CosineDecayWithLinearWarmup) {
  // Warm up from 0 to 0.1 over 10 steps, then decay to 0 over 100.
  const CosineDecay schedule(0.0, 100, 0.0, /*warmup_target=*/0.1, /*warmup_steps=*/10);
  EXPECT_DOUBLE_EQ(schedule(0), 0.0);
  EXPECT_DOUBLE_EQ(schedule(5), 0.05);
  EXPECT_DOUBLE_EQ(schedule(10), 0.1);
  EXPECT_DOUBLE_EQ(schedule(60), 0.1 * 0.5 * (1 + std::cos(std::numbers::pi * 0.5)));
  EXPECT_NEAR(schedule(110), 0.0, 1e-18);
  EXPECT_NEAR(schedule(1000), 0.0, 1e-18);
}

TEST(ScheduleTest, PiecewiseConstantDecay) {
  const PiecewiseConstantDecay pieces({100, 110}, {1.0, 0.5, 0.1});
  EXPECT_EQ(pieces(0), 1.0);
  EXPECT_EQ(pieces(100), 1.0);  // step <= boundaries[0]
  EXPECT_EQ(pieces(101), 0.5);
  EXPECT_EQ(pieces(110), 0.5);
  EXPECT_EQ(pieces(111), 0.1);
  EXPECT_EQ(pieces(100000), 0.1);
  EXPECT_EQ(PiecewiseConstantDecay({}, {0.3})(7), 0.3);
}

TEST(ScheduleTest, LinearWarmupWrapsAnySchedule) {
  const LinearWarmup warm(4, ExponentialDecay(0.2, 10, 0.5), /*initial_learning_rate=*/0.0);
  EXPECT_DOUBLE_EQ(warm(0), 0.0);
  EXPECT_DOUBLE_EQ(warm(1), 0.05);
  EXPECT_DOUBLE_EQ(warm(3), 0.15);
  EXPECT_DOUBLE_EQ(warm(4), 0.2);
  EXPECT_DOUBLE_EQ(warm(14), 0.1);  // the decay, shifted by the warmup
  const LinearWarmup constant(2, 0.4);
  EXPECT_DOUBLE_EQ(constant(1), 0.2);
  EXPECT_DOUBLE_EQ(constant(100), 0.4);
  // The same ramp as CosineDecay's own warmup.
  const CosineDecay keras_warmup(0.01, 50, 0.0, 0.1, 10);
  const LinearWarmup wrapped(10, CosineDecay(0.1, 50), 0.01);
  for (const int64_t step : {0, 3, 9, 10, 30, 60, 200}) EXPECT_NEAR(keras_warmup(step), wrapped(step), 1e-15) << step;
}

TEST(ScheduleTest, ConfigsRoundTrip) {
  const std::vector<std::shared_ptr<const LearningRateSchedule>> schedules = {
      std::make_shared<ExponentialDecay>(0.1, 10, 0.5, true),
      std::make_shared<PolynomialDecay>(0.1, 100, 0.01, 2.0, true),
      std::make_shared<CosineDecay>(0.1, 100, 0.1),
      std::make_shared<CosineDecay>(0.0, 100, 0.0, 0.1, 10),
      std::make_shared<PiecewiseConstantDecay>(std::vector<int64_t>{10, 20}, std::vector<double>{1, 0.5, 0.25}),
      std::make_shared<LinearWarmup>(5, PolynomialDecay(0.1, 10), 0.01),
      std::make_shared<LinearWarmup>(5, 0.3),
  };
  std::set<std::string> covered;
  for (const auto& schedule : schedules) {
    const nlohmann::json config = schedule->get_config();
    const auto copy = schedule_from_config(config);
    EXPECT_EQ(copy->get_config(), config);
    for (const int64_t step : {0, 3, 7, 15, 150}) EXPECT_EQ((*copy)(step), (*schedule)(step)) << config.dump();
    covered.insert(config["class_name"].get<std::string>());
  }
  testing::expect_registry_covered(registered_schedules(), covered, {"UserHalving"});
}

TEST(ScheduleTest, ConfigHasKerasKeys) {
  const nlohmann::json config = ExponentialDecay(0.1, 10, 0.5).get_config();
  EXPECT_EQ(config["class_name"], "ExponentialDecay");
  const nlohmann::json expected = {{"initial_learning_rate", 0.1},
                                   {"decay_steps", 10},
                                   {"decay_rate", 0.5},
                                   {"staircase", false},
                                   {"name", "ExponentialDecay"}};
  EXPECT_EQ(config["config"], expected);
  EXPECT_TRUE(CosineDecay(0.1, 10).get_config()["config"]["warmup_target"].is_null());
}

TEST(ScheduleTest, ReadsAConfigWrittenByKeras) {
  // keras.optimizers.schedules.serialize(PolynomialDecay(0.1, 10000, 0.01, power=0.5)).
  const auto schedule = schedule_from_config(nlohmann::json::parse(R"({"module": "keras.optimizers.schedules",
      "class_name": "PolynomialDecay", "config": {"initial_learning_rate": 0.1, "decay_steps": 10000,
      "end_learning_rate": 0.01, "power": 0.5, "cycle": false, "name": "PolynomialDecay"},
      "registered_name": null})"));
  EXPECT_DOUBLE_EQ((*schedule)(2500), 0.09 * std::sqrt(0.75) + 0.01);
}

TEST(ScheduleTest, ConstructorErrors) {
  EXPECT_THAT([] { ExponentialDecay(0.1, 0, 0.5); },
              ThrowsMessage<ValueError>(HasSubstr("ExponentialDecay: expected decay_steps > 0, got 0")));
  EXPECT_THAT([] { PolynomialDecay(0.1, -5); },
              ThrowsMessage<ValueError>(HasSubstr("PolynomialDecay: expected decay_steps > 0, got -5")));
  EXPECT_THAT([] { CosineDecay(0.1, 0); },
              ThrowsMessage<ValueError>(HasSubstr("CosineDecay: expected decay_steps > 0, got 0")));
  EXPECT_THAT([] { CosineDecay(0.1, 10, 0, 0.2, -1); },
              ThrowsMessage<ValueError>(HasSubstr("CosineDecay: expected warmup_steps >= 0, got -1")));
  EXPECT_THAT([] { PiecewiseConstantDecay({10, 20}, {1.0, 0.5}); },
              ThrowsMessage<ValueError>(HasSubstr("PiecewiseConstantDecay: expected one more value than boundaries, "
                                                  "got 2 boundaries [10, 20] and 2 values [1, 0.5]")));
  EXPECT_THAT([] { PiecewiseConstantDecay({20, 10}, {1.0, 0.5, 0.1}); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "PiecewiseConstantDecay: expected strictly increasing boundaries, got [20, 10]")));
  EXPECT_THAT([] { LinearWarmup(-1, 0.1); },
              ThrowsMessage<ValueError>(HasSubstr("LinearWarmup: expected warmup_steps >= 0, got -1")));
}

TEST(ScheduleTest, FromConfigErrors) {
  EXPECT_THAT([] { schedule_from_config({{"class_name", "InverseTimeDecay"}, {"config", nlohmann::json::object()}}); },
              ThrowsMessage<ValueError>(HasSubstr("schedule_from_config: unknown schedule class 'InverseTimeDecay'. "
                                                  "Known classes: CosineDecay, ExponentialDecay, LinearWarmup")));
  EXPECT_THAT([] { schedule_from_config({{"class_name", "ExponentialDecay"}, {"config", {{"decay_steps", 10}}}}); },
              ThrowsMessage<ValueError>(HasSubstr("ExponentialDecay: config is missing 'initial_learning_rate'")));
  EXPECT_THAT(
      [] {
        schedule_from_config({{"class_name", "PolynomialDecay"},
                              {"config", {{"initial_learning_rate", 0.1}, {"decay_steps", 10}, {"warmup", 3}}}});
      },
      ThrowsMessage<ValueError>(Eq("PolynomialDecay: unexpected config key 'warmup'")));
  EXPECT_THAT(
      [] {
        schedule_from_config(
            {{"class_name", "CosineDecay"}, {"config", {{"initial_learning_rate", 0.1}, {"decay_steps", 10}, {"alpah", 0.1}}}});
      },
      ThrowsMessage<ValueError>(Eq("CosineDecay: unexpected config key 'alpah' (did you mean 'alpha'?)")));
  EXPECT_THAT(
      [] {
        schedule_from_config(
            {{"class_name", "CosineDecay"}, {"config", {{"initial_learning_rate", 0.1}, {"decay_steps", 10.5}}}});
      },
      ThrowsMessage<ValueError>(Eq("CosineDecay: config key 'decay_steps': expected an integer, got 10.5 (a float)")));
  EXPECT_THAT([] { schedule_from_config(nlohmann::json::array()); },
              ThrowsMessage<ValueError>(HasSubstr("schedule_from_config: expected a config object, got []")));
}

}  // namespace
}  // namespace chorus::optimizers::schedules
