#include "chorus/layers/layer_normalization.h"

#include <cmath>

#include "tests/layers/layer_conformance.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

// Normalises each row of a (rows, n) view over its n elements.
Tensor layer_norm_ref(const Tensor& x, int64_t n, const std::vector<double>& gamma, const std::vector<double>& beta,
                      double epsilon) {
  const auto v = x.to_vector<double>();
  std::vector<float> out(v.size());
  for (size_t r = 0; r < v.size() / static_cast<size_t>(n); ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += v[r * n + i];
    mean /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) var += (v[r * n + i] - mean) * (v[r * n + i] - mean);
    var /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) {
      out[r * n + i] = static_cast<float>((v[r * n + i] - mean) / std::sqrt(var + epsilon) * gamma[i] + beta[i]);
    }
  }
  return from_values(out, x.shape());
}

TEST(LayerNormalizationTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<LayerNormalization>(); },
      .inputs = random_tensor(Shape{4, 6}, 1),
      .output_shapes = {Shape{4, 6}},
      .weights = {{"gamma", Shape{6}}, {"beta", Shape{6}}},
      .count_params = 12,
  });
  expect_layer_conforms({
      .make =
          [] {
            return std::make_shared<LayerNormalization>(LayerNormalizationOptions{.axis = {1, 2}, .center = false});
          },
      .inputs = random_tensor(Shape{2, 3, 5}, 2),
      .output_shapes = {Shape{2, 3, 5}},
      .weights = {{"gamma", Shape{3, 5}}},
      .count_params = 15,
  });
}

TEST(LayerNormalizationTest, ForwardMatchesAReferenceLoop) {
  for (int64_t rows : {1, 7, 1023}) {
    LayerNormalization norm({.beta_initializer = initializers::random_uniform(-1, 1, 2),
                             .gamma_initializer = initializers::random_uniform(0.5, 1.5, 1)});
    const Tensor x = random_tensor(Shape{rows, 9}, 3 + static_cast<uint64_t>(rows), -3, 5);
    const Tensor y = norm(x);
    const Tensor expected =
        layer_norm_ref(x, 9, norm.gamma().value().to_vector<double>(), norm.beta().value().to_vector<double>(), 1e-3);
    EXPECT_TRUE(tensors_near(y, expected, 1e-5, 1e-5)) << rows;
  }
}

TEST(LayerNormalizationTest, NormalisesOverSeveralTrailingAxesOfAView) {
  LayerNormalization norm(
      {.axis = {-2, -1}, .epsilon = 0.01, .gamma_initializer = initializers::random_uniform(0.5, 1.5, 4)});
  const Tensor x = random_tensor(Shape{5, 3, 4}, 5).first_axis_slice(1, 4);
  const Tensor y = norm(x);
  EXPECT_TRUE(tensors_near(
      y, layer_norm_ref(x, 12, norm.gamma().value().to_vector<double>(), std::vector<double>(12, 0.0), 0.01), 1e-5,
      1e-5));
}

TEST(LayerNormalizationTest, NormalisesOverALeadingAxis) {
  // axis 1 of (2, 3, 4): each (b, :, c) column is normalised, gamma has shape (3,).
  LayerNormalization norm({.axis = {1}, .scale = false});
  const Tensor x = random_tensor(Shape{2, 3, 4}, 6);
  const auto v = x.to_vector<double>();
  const auto y = norm(x).to_vector<double>();
  for (int b = 0; b < 2; ++b) {
    for (int c = 0; c < 4; ++c) {
      double mean = 0, var = 0;
      for (int t = 0; t < 3; ++t) mean += v[(b * 3 + t) * 4 + c] / 3;
      for (int t = 0; t < 3; ++t) var += (v[(b * 3 + t) * 4 + c] - mean) * (v[(b * 3 + t) * 4 + c] - mean) / 3;
      for (int t = 0; t < 3; ++t) {
        EXPECT_NEAR(y[(b * 3 + t) * 4 + c], (v[(b * 3 + t) * 4 + c] - mean) / std::sqrt(var + 1e-3), 1e-5);
      }
    }
  }
  EXPECT_EQ(norm.beta().shape(), (Shape{3}));
  EXPECT_FALSE(norm.gamma().defined());
}

TEST(LayerNormalizationTest, BFloat16InputsComputeInFloat32) {
  LayerNormalization norm;
  const Tensor x = random_tensor(Shape{3, 8}, 7, -2, 2, kBFloat16);
  const Tensor y = norm(x);
  EXPECT_EQ(y.dtype(), kBFloat16);
  const Tensor expected = layer_norm_ref(x, 8, std::vector<double>(8, 1.0), std::vector<double>(8, 0.0), 1e-3);
  EXPECT_TRUE(tensors_near(y, expected, 1e-2, 1e-2));
}

TEST(LayerNormalizationTest, GradientsMatchNumerical) {
  LayerNormalization norm({.beta_initializer = initializers::random_uniform(-1, 1, 2),
                           .gamma_initializer = initializers::random_uniform(0.5, 1.5, 1)});
  const Tensor x = random_tensor(Shape{4, 5}, 8, -2, 2);
  norm.build_from(x);
  expect_gradients_match([&](const std::vector<Tensor>& in) { return norm(in[0]); },
                         {x.clone(), norm.gamma().value(), norm.beta().value()});
}

TEST(LayerNormalizationTest, ConfigIsKerasShaped) {
  EXPECT_EQ(LayerNormalization({.name = "ln"}).get_config(), nlohmann::json::parse(R"({
      "name": "ln", "trainable": true, "dtype": "float32", "axis": -1, "epsilon": 0.001, "center": true, "scale": true,
      "beta_initializer": {"class_name": "Zeros", "config": {}},
      "gamma_initializer": {"class_name": "Ones", "config": {}}})"));
  EXPECT_EQ(LayerNormalization({.axis = {1, 2}}).get_config()["axis"], nlohmann::json::parse("[1, 2]"));
  // Keras writes the built axes as a list.
  auto layer = LayerNormalization::from_config(nlohmann::json::parse(R"({"axis": [-1], "epsilon": 1e-6})"));
  EXPECT_EQ(layer->get_config()["axis"], -1);
  EXPECT_EQ(layer->get_config()["epsilon"], 1e-6);
}

TEST(LayerNormalizationTest, Errors) {
  EXPECT_THAT(
      [] { LayerNormalization bad({.axis = {}}); },
      ThrowsMessage<ValueError>(HasSubstr("LayerNormalization: expected at least one axis. Received: axis=[]")));
  EXPECT_THAT([] { LayerNormalization bad({.epsilon = -1}); },
              ThrowsMessage<ValueError>(HasSubstr("LayerNormalization: expected epsilon >= 0. Received: epsilon=-1")));
  LayerNormalization out_of_range({.axis = {2}, .name = "ln"});
  EXPECT_THAT(
      [&] {
        out_of_range(random_tensor(Shape{3, 4}, 1));
      },
      ThrowsMessage<IndexError>(HasSubstr("ln: axis 2 is out of range for inputs of shape (3, 4)")));
  LayerNormalization duplicate({.axis = {1, -1}, .name = "ln2"});
  EXPECT_THAT(
      [&] {
        duplicate(random_tensor(Shape{3, 4}, 1));
      },
      ThrowsMessage<ValueError>(
          HasSubstr("ln2: duplicate axes are not allowed, got axis [1,-1] for inputs of rank 2")));
  LayerNormalization norm({.name = "layer_normalization_1"});
  norm(random_tensor(Shape{4, 8}, 1));
  testing::expect_2d_input_spec(norm, /*batch=*/4, /*units=*/8);
}

}  // namespace
}  // namespace chorus::layers
