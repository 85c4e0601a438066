#include "chorus/layers/dropout.h"

#include <thread>

#include "chorus/autograd/tape.h"
#include "chorus/ops/ops.h"
#include "tests/layers/layer_conformance.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

TEST(DropoutTest, Conformance) {
  expect_layer_conforms({
      .make =
          [] {
            return std::make_shared<Dropout>(0.5, DropoutOptions{.noise_shape = {-1, 1, -1}, .seed = 3});
          },
      .inputs = random_tensor(Shape{4, 3, 5}, 1),
      .output_shapes = {Shape{4, 3, 5}},
  });
}

TEST(DropoutTest, IdentityInInference) {
  Dropout dropout(0.9);
  const Tensor x = random_tensor(Shape{7, 9}, 2);
  const Tensor y = dropout(x);
  EXPECT_FALSE(y.same(x));  // a fresh handle on the same data
  EXPECT_TRUE(tensors_near(y, x, 0, 0));
  Dropout none(0.0);
  EXPECT_TRUE(tensors_near(none(x, /*training=*/true), x, 0, 0));
}

TEST(DropoutTest, ZeroesAboutRateAndScalesTheRest) {
  for (double rate : {0.1, 0.5, 0.8}) {
    Dropout dropout(rate, {.seed = 7});
    const Tensor x = random_tensor(Shape{1023, 97}, 3, 0.5, 1.5);  // never 0 itself
    const auto in = x.to_vector<float>();
    const auto out = dropout(x, /*training=*/true).to_vector<float>();
    int64_t zeros = 0;
    const float scale = static_cast<float>(1.0 / (1.0 - rate));
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] == 0) {
        ++zeros;
      } else {
        EXPECT_FLOAT_EQ(out[i], in[i] * scale) << i;
      }
    }
    // 99231 draws: the standard error of the rate is below 0.0016.
    EXPECT_NEAR(static_cast<double>(zeros) / static_cast<double>(out.size()), rate, 0.01) << rate;
  }
}

TEST(DropoutTest, RateOneDropsEverything) {
  Dropout dropout(1.0);
  const Tensor y = dropout(random_tensor(Shape{5, 5}, 1), /*training=*/true);
  for (float v : y.to_vector<float>()) EXPECT_EQ(v, 0.0f);
}

TEST(DropoutTest, SeededDropoutRepeatsItsSequenceOfMasks) {
  const Tensor x = random_tensor(Shape{8, 16}, 4, 0.5, 1.5);
  Dropout a(0.5, {.seed = 11}), b(0.5, {.seed = 11}), c(0.5, {.seed = 12});
  const Tensor a1 = a(x, true), a2 = a(x, true);
  EXPECT_FALSE(tensors_near(a1, a2, 0, 0));  // each call draws a new mask
  EXPECT_TRUE(tensors_near(b(x, true), a1, 0, 0));
  EXPECT_TRUE(tensors_near(b(x, true), a2, 0, 0));
  EXPECT_FALSE(tensors_near(c(x, true), a1, 0, 0));
  // The call count resumes a sequence (what a checkpoint restores).
  EXPECT_EQ(a.call_count(), 2u);
  Dropout resumed(0.5, {.seed = 11});
  resumed.set_call_count(1);
  EXPECT_TRUE(tensors_near(resumed(x, true), a2, 0, 0));
}

TEST(DropoutTest, UnseededDropoutFollowsTheProcessSeed) {
  const Tensor x = random_tensor(Shape{8, 16}, 4, 0.5, 1.5);
  set_random_seed(5);
  Dropout a(0.5);
  set_random_seed(5);
  Dropout b(0.5);
  EXPECT_TRUE(tensors_near(a(x, true), b(x, true), 0, 0));
}

TEST(DropoutTest, NoiseShapeSharesTheMaskAlongBroadcastAxes) {
  Dropout dropout(0.5, {.noise_shape = {-1, 1, -1}, .seed = 1});
  const Tensor y = dropout(ones(Shape{4, 6, 5}), true);
  const auto v = y.to_vector<float>();
  for (int b = 0; b < 4; ++b) {
    for (int t = 1; t < 6; ++t) {
      for (int c = 0; c < 5; ++c) EXPECT_EQ(v[(b * 6 + t) * 5 + c], v[b * 6 * 5 + c]);
    }
  }
}

TEST(DropoutTest, GradientIsTheMask) {
  Dropout dropout(0.5, {.seed = 2});
  Tensor x = random_tensor(Shape{6, 7}, 5, 0.5, 1.5);
  autograd::GradientTape tape;
  tape.watch(x);
  const Tensor y = dropout(x, true);
  const Tensor g = tape.gradient(ops::sum(y), {x})[0];
  EXPECT_TRUE(tensors_near(g, y / x, 1e-6, 1e-6));
}

TEST(DropoutTest, ConcurrentCallsDrawDistinctMasks) {
  Dropout dropout(0.5, {.seed = 9});
  const Tensor x = ones(Shape{32, 32});
  dropout(x, true);  // the first call (which records output shapes) runs alone
  std::vector<Tensor> masks(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { masks[t] = dropout(x, true); });
  for (auto& th : threads) th.join();
  EXPECT_EQ(dropout.call_count(), 5u);
  // Together they are masks 1 to 4 of the sequence, in some order.
  Dropout serial(0.5, {.seed = 9});
  serial.set_call_count(1);
  for (int k = 0; k < 4; ++k) {
    const Tensor expected = serial(x, true);
    int matches = 0;
    for (const Tensor& m : masks) matches += tensors_near(m, expected, 0, 0) ? 1 : 0;
    EXPECT_EQ(matches, 1) << "mask " << k;
  }
}

TEST(DropoutTest, ConfigIsKerasShaped) {
  Dropout dropout(0.25, {.noise_shape = {-1, 1}, .seed = 4, .name = "drop"});
  EXPECT_EQ(dropout.get_config(), nlohmann::json::parse(R"({
      "name": "drop", "trainable": true, "dtype": "float32", "rate": 0.25, "seed": 4, "noise_shape": [null, 1]})"));
  EXPECT_EQ(Dropout(0.5).get_config()["noise_shape"], nullptr);
  EXPECT_EQ(Dropout(0.5).get_config()["seed"], nullptr);
}

TEST(DropoutTest, Errors) {
  EXPECT_THAT([] { Dropout bad(1.5); },
              ThrowsMessage<ValueError>(HasSubstr("Dropout: expected rate in [0, 1]. Received: rate=1.5")));
  EXPECT_THAT([] { Dropout bad(-0.1); },
              ThrowsMessage<ValueError>(HasSubstr("Dropout: expected rate in [0, 1]. Received: rate=-0.1")));
  EXPECT_THAT(
      [] {
        Dropout bad(0.5, {.noise_shape = {2, 0}});
      },
      ThrowsMessage<ValueError>(
          HasSubstr("Dropout: expected noise_shape entries > 0 or -1 (None). Received: noise_shape=(2, 0)")));
  Dropout dropout(0.5, {.noise_shape = {5, 1}, .name = "dropout_3"});
  EXPECT_THAT(
      [&] {
        dropout(ones(Shape{4, 3}), true);
      },
      ThrowsMessage<ShapeError>(
          HasSubstr("dropout_3: noise_shape (5, 1) does not broadcast to inputs of shape (4, 3)")));
  EXPECT_THAT(
      [&] {
        dropout(ones(Shape{4, 3, 2}), false);
      },
      ThrowsMessage<ShapeError>(HasSubstr("dropout_3: noise_shape (5, 1) does not broadcast")));
  Dropout plain(0.5, {.name = "d"});
  EXPECT_THAT(
      [&] {
        plain(from_values<int32_t>({1, 2}), true);
      },
      ThrowsMessage<DTypeError>(HasSubstr("d: expected floating inputs, got int32")));
}

// json's get<uint64_t>() wrapped a seed of -1 to 2^64 - 1 and truncated 1.5 to 1.
TEST(DropoutTest, FromConfigChecksTheSeedAndNoiseShape) {
  EXPECT_THAT([] { Dropout::from_config(nlohmann::json::parse(R"({"rate": 0.5, "seed": -1})")); },
              ThrowsMessage<ValueError>(
                  Eq("Dropout: config key 'seed': expected a non-negative integer, got -1 (an integer)")));
  EXPECT_THAT([] { Dropout::from_config(nlohmann::json::parse(R"({"rate": 0.5, "noise_shape": [null, 1.5]})")); },
              ThrowsMessage<ValueError>(Eq(
                  "Dropout: config key 'noise_shape': expected a list of integers or nulls, got [null,1.5] (a list)")));
}

}  // namespace
}  // namespace chorus::layers
