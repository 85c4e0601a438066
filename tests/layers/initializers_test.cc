#include "chorus/layers/initializers.h"

#include <cmath>

#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::layers {
namespace {

using namespace testing::test_names;

struct Stats {
  double mean = 0, stddev = 0, min = 0, max = 0;
};

Stats stats_of(const Tensor& t) {
  const auto v = t.to_vector<double>();
  Stats s{0, 0, v[0], v[0]};
  for (double x : v) {
    s.mean += x;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
  }
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.stddev += (x - s.mean) * (x - s.mean);
  s.stddev = std::sqrt(s.stddev / static_cast<double>(v.size()));
  return s;
}

// A (400, 600) kernel: fan_in 400, fan_out 600, 240000 draws.
const Shape kKernel{400, 600};

TEST(InitializersTest, ZerosOnesConstant) {
  EXPECT_TRUE(tensors_near(initializers::zeros()(Shape{2, 3}), zeros(Shape{2, 3}), 0, 0));
  EXPECT_TRUE(tensors_near(initializers::ones()(Shape{7}), ones(Shape{7}), 0, 0));
  EXPECT_TRUE(tensors_near(initializers::constant(2.5)(Shape{3, 1}), full(Shape{3, 1}, 2.5), 0, 0));
  EXPECT_EQ(initializers::zeros()(Shape{4}, kInt64).dtype(), kInt64);
}

TEST(InitializersTest, GlorotUniformStaysWithinItsLimit) {
  const double limit = std::sqrt(6.0 / (400 + 600));
  const Stats s = stats_of(initializers::glorot_uniform(1)(kKernel));
  EXPECT_GE(s.min, -limit);
  EXPECT_LT(s.max, limit);
  EXPECT_GT(s.max, 0.99 * limit);  // and fills it
  EXPECT_LT(s.min, -0.99 * limit);
  EXPECT_NEAR(s.mean, 0, 0.002);
  EXPECT_NEAR(s.stddev, limit / std::sqrt(3.0), 0.002);
}

TEST(InitializersTest, VarianceScalingFamilyHasKerasStddevs) {
  struct Case {
    Initializer init;
    double stddev;
    bool truncated;  // a truncated normal stays within 2 of its pre-truncation stddevs
  };
  const double fan_in = 400, fan_out = 600;
  const Case cases[] = {
      {initializers::glorot_normal(2), std::sqrt(2 / (fan_in + fan_out)), true},
      {initializers::he_normal(3), std::sqrt(2 / fan_in), true},
      {initializers::lecun_normal(4), std::sqrt(1 / fan_in), true},
      {initializers::he_uniform(5), std::sqrt(2 / fan_in), false},
      {initializers::lecun_uniform(6), std::sqrt(1 / fan_in), false},
  };
  for (const Case& c : cases) {
    const Stats s = stats_of(c.init(kKernel));
    const std::string what = c.init.get_config().dump();
    EXPECT_NEAR(s.mean, 0, 0.01 * c.stddev) << what;
    EXPECT_NEAR(s.stddev, c.stddev, 0.01 * c.stddev) << what;
    // Truncated: |x| <= 2 * (stddev / .8796...); uniform: |x| <= sqrt(3) * stddev.
    const double bound = c.truncated ? 2 * c.stddev / 0.87962566103423978 : std::sqrt(3.0) * c.stddev;
    EXPECT_LE(std::max(-s.min, s.max), bound * (1 + 1e-6)) << what;
    EXPECT_GT(std::max(-s.min, s.max), 0.98 * bound) << what;
  }
}

TEST(InitializersTest, FansFollowKerasForOtherRanks) {
  // Rank 1: fan_in = fan_out = n. Rank 4 (3, 3, 16, 32): receptive field 9, so
  // fan_in = 144, fan_out = 288.
  const double limit1 = std::sqrt(6.0 / (500 + 500));
  const Stats s1 = stats_of(initializers::glorot_uniform(7)(Shape{500}));
  EXPECT_LE(std::max(-s1.min, s1.max), limit1);
  EXPECT_GT(std::max(-s1.min, s1.max), 0.95 * limit1);
  const double limit4 = std::sqrt(6.0 / (144 + 288));
  const Stats s4 = stats_of(initializers::glorot_uniform(8)(Shape{3, 3, 16, 32}));
  EXPECT_LE(std::max(-s4.min, s4.max), limit4);
  EXPECT_GT(std::max(-s4.min, s4.max), 0.99 * limit4);
  // Rank 0: fans of 1, so he_uniform's limit is sqrt(6).
  const double x = initializers::he_uniform(9)(Shape{}).item<double>();
  EXPECT_LE(std::abs(x), std::sqrt(6.0));
}

TEST(InitializersTest, RandomUniformNormalTruncated) {
  const Stats u = stats_of(initializers::random_uniform(-0.05, 0.05, 1)(kKernel));
  EXPECT_GE(u.min, -0.05);
  EXPECT_LT(u.max, 0.05);
  EXPECT_NEAR(u.stddev, 0.1 / std::sqrt(12.0), 5e-4);
  const Stats n = stats_of(initializers::random_normal(1.0, 2.0, 1)(kKernel));
  EXPECT_NEAR(n.mean, 1.0, 0.02);
  EXPECT_NEAR(n.stddev, 2.0, 0.02);
  const Stats t = stats_of(initializers::truncated_normal(0.0, 1.0, 1)(kKernel));
  EXPECT_GE(t.min, -2.0);
  EXPECT_LE(t.max, 2.0);
  EXPECT_NEAR(t.stddev, 0.87962566103423978, 0.01);
}

TEST(InitializersTest, SeededInitializersRepeatUnseededOnesDoNot) {
  const Initializer seeded = initializers::glorot_uniform(42);
  EXPECT_TRUE(tensors_near(seeded(Shape{5, 7}), seeded(Shape{5, 7}), 0, 0));
  EXPECT_TRUE(tensors_near(seeded(Shape{5, 7}), initializers::glorot_uniform(42)(Shape{5, 7}), 0, 0));
  EXPECT_FALSE(tensors_near(seeded(Shape{5, 7}), initializers::glorot_uniform(43)(Shape{5, 7}), 0, 0));
  const Initializer unseeded = "glorot_uniform";
  EXPECT_FALSE(tensors_near(unseeded(Shape{5, 7}), unseeded(Shape{5, 7}), 0, 0));
}

TEST(InitializersTest, SetRandomSeedRestartsTheProcessStream) {
  const Initializer init = "he_normal";
  set_random_seed(7);
  const Tensor a1 = init(Shape{3, 4}), a2 = init(Shape{3, 4});
  set_random_seed(7);
  EXPECT_TRUE(tensors_near(init(Shape{3, 4}), a1, 0, 0));
  EXPECT_TRUE(tensors_near(init(Shape{3, 4}), a2, 0, 0));
  set_random_seed(8);
  EXPECT_FALSE(tensors_near(init(Shape{3, 4}), a1, 0, 0));
  // Forked generators differ from one another.
  set_random_seed(7);
  const Generator g1 = next_generator(), g2 = next_generator();
  EXPECT_NE(g1.key(), g2.key());
}

TEST(InitializersTest, StringNamesAndKerasClassNames) {
  for (const char* name :
       {"zeros", "ones", "glorot_uniform", "glorot_normal", "he_uniform", "he_normal", "lecun_uniform", "lecun_normal",
        "random_uniform", "random_normal", "truncated_normal", "uniform", "normal", "GlorotUniform"}) {
    const Initializer init = name;
    EXPECT_EQ(init(Shape{2, 2}).shape(), (Shape{2, 2})) << name;
  }
  EXPECT_EQ(Initializer("uniform").get_config(), nlohmann::json::parse(R"({"class_name": "RandomUniform",
                                      "config": {"seed": null, "minval": -0.05, "maxval": 0.05}})"));
}

TEST(InitializersTest, ConfigsAreKerasShapedAndRoundTrip) {
  EXPECT_EQ(initializers::glorot_uniform().get_config(),
            nlohmann::json::parse(R"({"class_name": "GlorotUniform", "config": {"seed": null}})"));
  EXPECT_EQ(initializers::he_normal(3).get_config(),
            nlohmann::json::parse(R"({"class_name": "HeNormal", "config": {"seed": 3}})"));
  EXPECT_EQ(initializers::zeros().get_config(), nlohmann::json::parse(R"({"class_name": "Zeros", "config": {}})"));
  EXPECT_EQ(initializers::constant(0.5).get_config(),
            nlohmann::json::parse(R"({"class_name": "Constant", "config": {"value": 0.5}})"));
  EXPECT_EQ(
      initializers::truncated_normal(0.1, 0.2, 5).get_config(),
      nlohmann::json::parse(R"({"class_name": "TruncatedNormal", "config": {"seed": 5, "mean": 0.1, "stddev": 0.2}})"));
  for (const Initializer& init :
       {initializers::zeros(), initializers::ones(), initializers::constant(3), initializers::random_uniform(-1, 2, 4),
        initializers::random_normal(0.5, 0.1, 4), initializers::truncated_normal(0, 1, 4),
        initializers::glorot_uniform(4), initializers::glorot_normal(4), initializers::he_uniform(4),
        initializers::he_normal(4), initializers::lecun_uniform(4), initializers::lecun_normal(4)}) {
    const Initializer copy = Initializer::from_config(nlohmann::json::parse(init.get_config().dump()));
    EXPECT_EQ(copy.get_config(), init.get_config());
    EXPECT_TRUE(tensors_near(copy(Shape{6, 5}), init(Shape{6, 5}), 0, 0)) << init.get_config().dump();
  }
  // Keras's VarianceScaling itself, and a bare name where a config goes.
  const Initializer vs = Initializer::from_config(nlohmann::json::parse(
      R"({"class_name": "VarianceScaling",
          "config": {"scale": 2.0, "mode": "fan_in", "distribution": "untruncated_normal", "seed": 1}})"));
  EXPECT_NEAR(stats_of(vs(kKernel)).stddev, std::sqrt(2.0 / 400), 1e-3);
  EXPECT_EQ(Initializer::from_config("ones").get_config()["class_name"], "Ones");
}

TEST(InitializersTest, Errors) {
  EXPECT_THAT([] { Initializer bad("glorot"); },
              ThrowsMessage<ValueError>(HasSubstr("Unknown initializer 'glorot'. Expected one of: glorot_normal, "
                                                  "glorot_uniform, he_normal")));
  EXPECT_THAT([] { Initializer::from_config(nlohmann::json::parse(R"({"class_name": "Orthogonal"})")); },
              ThrowsMessage<ValueError>(HasSubstr("Unknown initializer class 'Orthogonal'. Expected one of:")));
  EXPECT_THAT([] { Initializer::from_config(nlohmann::json::parse("[1, 2]")); },
              ThrowsMessage<ValueError>(HasSubstr("Initializer: expected a name or")));
  EXPECT_THAT(
      [] { Initializer::from_config(nlohmann::json::parse(R"({"class_name": "HeNormal", "config": {"seed": "x"}})")); },
      ThrowsMessage<ValueError>(HasSubstr("HeNormal: config key 'seed': expected a non-negative integer, got \"x\" (a string)")));
  EXPECT_THAT(
      [] { Initializer::from_config(nlohmann::json::parse(R"({"class_name": "HeNormal", "config": {"sead": 1}})")); },
      ThrowsMessage<ValueError>(HasSubstr("HeNormal: unexpected config key 'sead' (did you mean 'seed'?)")));
  EXPECT_THAT(
      [] {
        Initializer::from_config(nlohmann::json::parse(R"({"class_name": "Constant", "config": {"value": "x"}})"));
      },
      ThrowsMessage<ValueError>(HasSubstr("Constant: config key 'value': expected a number, got \"x\" (a string)")));
  EXPECT_THAT(
      [] { initializers::random_uniform(1, 1); },
      ThrowsMessage<ValueError>(HasSubstr("RandomUniform: expected minval < maxval. Received: minval=1, maxval=1")));
  EXPECT_THAT([] { initializers::random_normal(0, -1); },
              ThrowsMessage<ValueError>(HasSubstr("RandomNormal: expected stddev >= 0. Received: stddev=-1")));
  EXPECT_THAT([] { initializers::truncated_normal(0, -1); },
              ThrowsMessage<ValueError>(HasSubstr("TruncatedNormal: expected stddev >= 0. Received: stddev=-1")));
  const auto vs = [](const char* config) {
    return [config] {
      Initializer::from_config(
          nlohmann::json{{"class_name", "VarianceScaling"}, {"config", nlohmann::json::parse(config)}});
    };
  };
  EXPECT_THAT(vs(R"({"scale": 0})"), ThrowsMessage<ValueError>(HasSubstr("expected scale > 0. Received: scale=0")));
  EXPECT_THAT(vs(R"({"mode": "fan_max"})"),
              ThrowsMessage<ValueError>(
                  HasSubstr("expected mode to be one of fan_in, fan_out, fan_avg. Received: mode=fan_max")));
  EXPECT_THAT(vs(R"({"distribution": "cauchy"})"),
              ThrowsMessage<ValueError>(HasSubstr("Received: distribution=cauchy")));
  EXPECT_THAT(
      [] {
        initializers::glorot_uniform()(Shape{2, 2}, kInt32);
      },
      ThrowsMessage<DTypeError>(HasSubstr("expected a floating dtype")));
}

TEST(InitializersTest, TruncatedNormalRedrawsBeyondTwoStddevsAsKeras) {
  // BERT's TruncatedNormal(stddev=0.02), here around a mean of 0.5: Keras redraws values
  // more than 2 stddevs from the mean, so the draws fill [mean - 2s, mean + 2s] with a
  // normal's shape instead of piling up at the bounds as clipping would.
  const double mean = 0.5, stddev = 0.02;
  const Initializer init = initializers::truncated_normal(mean, stddev, 17);
  const auto v = init(kKernel).to_vector<double>();
  int64_t within_one = 0, near_bounds = 0;
  double sum = 0, sq = 0;
  for (double x : v) {
    const double z = (x - mean) / stddev;
    EXPECT_LE(std::abs(z), 2.0 + 1e-4);
    within_one += std::abs(z) <= 1.0 ? 1 : 0;
    near_bounds += std::abs(z) > 1.99 ? 1 : 0;
    sum += x;
    sq += (x - mean) * (x - mean);
  }
  const double n = static_cast<double>(v.size());
  EXPECT_NEAR(sum / n, mean, 2e-4);
  // The stddev of a unit normal truncated at +-2 is 0.8796; P(|z| <= 1 | |z| <= 2) is
  // 0.6827 / 0.9545 = 0.7153; P(1.99 < |z| <= 2) is about 0.0011 (clipping: 0.0455).
  EXPECT_NEAR(std::sqrt(sq / n), 0.87962566103423978 * stddev, 2e-4);
  EXPECT_NEAR(static_cast<double>(within_one) / n, 0.7153, 0.005);
  EXPECT_LT(static_cast<double>(near_bounds) / n, 0.003);
  EXPECT_EQ(init.get_config(), nlohmann::json::parse(R"({"class_name": "TruncatedNormal",
                                                          "config": {"seed": 17, "mean": 0.5, "stddev": 0.02}})"));
  EXPECT_TRUE(tensors_near(Initializer::from_config(init.get_config())(Shape{3, 4}), init(Shape{3, 4}), 0, 0));
}

}  // namespace
}  // namespace chorus::layers
