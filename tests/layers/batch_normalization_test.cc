#include "chorus/layers/batch_normalization.h"

#include <cmath>

#include "chorus/autograd/tape.h"
#include "tests/layers/layer_conformance.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

// Per-channel statistics of a (rows, channels) view: the mean and the biased variance.
std::pair<std::vector<double>, std::vector<double>> channel_moments(const Tensor& x, int64_t channels) {
  const auto v = x.to_vector<double>();
  const size_t rows = v.size() / static_cast<size_t>(channels);
  std::vector<double> mean(channels, 0.0), var(channels, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) mean[c] += v[r * channels + c] / static_cast<double>(rows);
  }
  for (size_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      var[c] += (v[r * channels + c] - mean[c]) * (v[r * channels + c] - mean[c]) / static_cast<double>(rows);
    }
  }
  return {mean, var};
}

Tensor normalize_ref(const Tensor& x, int64_t channels, const std::vector<double>& mean, const std::vector<double>& var,
                     const std::vector<double>& gamma, const std::vector<double>& beta, double epsilon) {
  const auto v = x.to_vector<double>();
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const size_t c = i % static_cast<size_t>(channels);
    out[i] = static_cast<float>((v[i] - mean[c]) / std::sqrt(var[c] + epsilon) * gamma[c] + beta[c]);
  }
  return from_values(out, x.shape());
}

std::vector<double> values(const Variable& v) { return v.value().to_vector<double>(); }

TEST(BatchNormalizationTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<BatchNormalization>(); },
      .inputs = random_tensor(Shape{4, 3}, 1),
      .output_shapes = {Shape{4, 3}},
      .weights = {{"gamma", Shape{3}},
                  {"beta", Shape{3}},
                  {"moving_mean", Shape{3}, false},
                  {"moving_variance", Shape{3}, false}},
      .count_params = 12,
  });
  expect_layer_conforms({
      .make = [] { return std::make_shared<BatchNormalization>(BatchNormalizationOptions{.axis = 1, .scale = false}); },
      .inputs = random_tensor(Shape{2, 5, 3}, 2),
      .output_shapes = {Shape{2, 5, 3}},
      .weights = {{"beta", Shape{5}}, {"moving_mean", Shape{5}, false}, {"moving_variance", Shape{5}, false}},
      .count_params = 15,
  });
}

TEST(BatchNormalizationTest, TrainingUsesBatchStatisticsAndUpdatesMovingOnes) {
  for (int64_t rows : {1, 7, 1023}) {
    BatchNormalization bn({.momentum = 0.9,
                           .beta_initializer = initializers::random_uniform(-1, 1, 1),
                           .gamma_initializer = initializers::random_uniform(0.5, 1.5, 2),
                           .moving_mean_initializer = initializers::random_uniform(-1, 1, 3),
                           .moving_variance_initializer = initializers::random_uniform(0.5, 2, 4)});
    const Tensor x = random_tensor(Shape{rows, 5}, 10 + static_cast<uint64_t>(rows), -2, 4);
    bn.build_from(x);
    const auto old_mean = values(bn.moving_mean()), old_var = values(bn.moving_variance());
    const Tensor y = bn(x, /*training=*/true);
    const auto [mean, var] = channel_moments(x, 5);
    EXPECT_TRUE(
        tensors_near(y, normalize_ref(x, 5, mean, var, values(bn.gamma()), values(bn.beta()), 1e-3), 1e-4, 1e-4))
        << rows;
    const auto new_mean = values(bn.moving_mean()), new_var = values(bn.moving_variance());
    for (int c = 0; c < 5; ++c) {
      EXPECT_NEAR(new_mean[c], old_mean[c] * 0.9 + mean[c] * 0.1, 1e-5) << rows;
      EXPECT_NEAR(new_var[c], old_var[c] * 0.9 + var[c] * 0.1, 1e-5) << rows;
    }
  }
}

TEST(BatchNormalizationTest, InferenceUsesMovingStatisticsAndChangesNothing) {
  BatchNormalization bn({.moving_mean_initializer = initializers::random_uniform(-1, 1, 3),
                         .moving_variance_initializer = initializers::random_uniform(0.5, 2, 4)});
  const Tensor x = random_tensor(Shape{6, 4}, 5);
  bn.build_from(x);
  const auto mean = values(bn.moving_mean()), var = values(bn.moving_variance());
  const Tensor y = bn(x);
  EXPECT_TRUE(tensors_near(y, normalize_ref(x, 4, mean, var, values(bn.gamma()), values(bn.beta()), 1e-3), 1e-5, 1e-5));
  EXPECT_EQ(values(bn.moving_mean()), mean);
  EXPECT_EQ(values(bn.moving_variance()), var);
}

TEST(BatchNormalizationTest, ChannelAxisInTheMiddle) {
  // (B, C, L) with axis 1: statistics over B and L for each of C channels.
  BatchNormalization bn({.axis = 1});
  const Tensor x = random_tensor(Shape{3, 2, 4}, 6);
  const auto v = x.to_vector<double>();
  const auto y = bn(x, true).to_vector<double>();
  for (int c = 0; c < 2; ++c) {
    double mean = 0, var = 0;
    for (int b = 0; b < 3; ++b) {
      for (int l = 0; l < 4; ++l) mean += v[(b * 2 + c) * 4 + l] / 12;
    }
    for (int b = 0; b < 3; ++b) {
      for (int l = 0; l < 4; ++l) var += (v[(b * 2 + c) * 4 + l] - mean) * (v[(b * 2 + c) * 4 + l] - mean) / 12;
    }
    for (int b = 0; b < 3; ++b) {
      for (int l = 0; l < 4; ++l) {
        EXPECT_NEAR(y[(b * 2 + c) * 4 + l], (v[(b * 2 + c) * 4 + l] - mean) / std::sqrt(var + 1e-3), 1e-5);
      }
    }
    EXPECT_NEAR(values(bn.moving_mean())[c], 0.01 * mean, 1e-6);
  }
}

TEST(BatchNormalizationTest, NonTrainableLayerNormalisesWithMovingStatisticsEvenInTraining) {
  BatchNormalization bn({.moving_mean_initializer = initializers::constant(0.5)});
  const Tensor x = random_tensor(Shape{5, 2}, 7);
  bn.build_from(x);
  bn.set_trainable(false);
  const Tensor y = bn(x, /*training=*/true);
  EXPECT_TRUE(tensors_near(y, normalize_ref(x, 2, {0.5, 0.5}, {1, 1}, {1, 1}, {0, 0}, 1e-3), 1e-5, 1e-5));
  EXPECT_EQ(values(bn.moving_mean()), (std::vector<double>{0.5, 0.5}));
}

TEST(BatchNormalizationTest, EmptyTrainingBatchLeavesMovingStatisticsAlone) {
  BatchNormalization bn;
  const Tensor x = Tensor::empty(Shape{0, 3});
  EXPECT_EQ(bn(x, true).shape(), (Shape{0, 3}));
  EXPECT_EQ(values(bn.moving_mean()), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(values(bn.moving_variance()), (std::vector<double>{1, 1, 1}));
}

TEST(BatchNormalizationTest, TrainingGradientsMatchNumerical) {
  BatchNormalization bn({.beta_initializer = initializers::random_uniform(-1, 1, 1),
                         .gamma_initializer = initializers::random_uniform(0.5, 1.5, 2)});
  const Tensor x = random_tensor(Shape{6, 3}, 8, -2, 2);
  bn.build_from(x);
  // Each evaluation also moves the moving statistics; the outputs do not depend on them.
  expect_gradients_match([&](const std::vector<Tensor>& in) { return bn(in[0], /*training=*/true); },
                         {x.clone(), bn.gamma().value(), bn.beta().value()});
}

TEST(BatchNormalizationTest, MovingStatisticsGetNoGradient) {
  BatchNormalization bn;
  const Tensor x = random_tensor(Shape{4, 2}, 9);
  bn.build_from(x);
  autograd::GradientTape tape;
  const Tensor y = bn(x, true);
  const auto grads = tape.gradient(y, {bn.moving_mean().value(), bn.gamma().value()});
  EXPECT_FALSE(grads[0].defined());
  EXPECT_TRUE(grads[1].defined());
}

TEST(BatchNormalizationTest, ConfigIsKerasShaped) {
  EXPECT_EQ(BatchNormalization({.name = "bn"}).get_config(), nlohmann::json::parse(R"({
      "name": "bn", "trainable": true, "dtype": "float32", "axis": -1, "momentum": 0.99, "epsilon": 0.001, "center": true, "scale": true,
      "beta_initializer": {"class_name": "Zeros", "config": {}},
      "gamma_initializer": {"class_name": "Ones", "config": {}},
      "moving_mean_initializer": {"class_name": "Zeros", "config": {}},
      "moving_variance_initializer": {"class_name": "Ones", "config": {}}})"));
}

TEST(BatchNormalizationTest, Errors) {
  EXPECT_THAT(
      [] { BatchNormalization bad({.momentum = 1.5}); },
      ThrowsMessage<ValueError>(HasSubstr("BatchNormalization: expected momentum in [0, 1]. Received: momentum=1.5")));
  EXPECT_THAT(
      [] { BatchNormalization bad({.epsilon = -0.5}); },
      ThrowsMessage<ValueError>(HasSubstr("BatchNormalization: expected epsilon >= 0. Received: epsilon=-0.5")));
  BatchNormalization bad_axis({.axis = 3, .name = "bn"});
  EXPECT_THAT(
      [&] {
        bad_axis(random_tensor(Shape{2, 3}, 1));
      },
      ThrowsMessage<IndexError>(HasSubstr("bn: axis 3 is out of range for inputs of shape (2, 3)")));
  BatchNormalization bn({.name = "batch_normalization_2"});
  bn(random_tensor(Shape{2, 3}, 1));
  testing::expect_2d_input_spec(bn, /*batch=*/2, /*units=*/3);
}

}  // namespace
}  // namespace chorus::layers
