#include "chorus/layers/einsum_dense.h"

#include <cmath>

#include "chorus/layers/dense.h"
#include "chorus/ops/ops.h"
#include "tests/layers/layer_conformance.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

TEST(EinsumDenseTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<EinsumDense>("ab,bc->ac", std::vector<int64_t>{5}, EinsumDenseOptions{.bias_axes = "c"}); },
      .inputs = random_tensor(Shape{4, 7}, 1),
      .output_shapes = {Shape{4, 5}},
      .weights = {{"kernel", Shape{7, 5}}, {"bias", Shape{5}}},
      .count_params = 40,
  });
  // Multi-head attention's projections in and out.
  expect_layer_conforms({
      .make = [] { return std::make_shared<EinsumDense>("abc,cde->abde", std::vector<int64_t>{-1, 2, 3}, EinsumDenseOptions{.bias_axes = "de"}); },
      .inputs = random_tensor(Shape{2, 5, 8}, 2),
      .output_shapes = {Shape{2, 5, 2, 3}},
      .weights = {{"kernel", Shape{8, 2, 3}}, {"bias", Shape{2, 3}}},
      .count_params = 8 * 6 + 6,
  });
  expect_layer_conforms({
      .make = [] { return std::make_shared<EinsumDense>("abcd,cde->abe", std::vector<int64_t>{-1, 8}); },
      .inputs = random_tensor(Shape{2, 5, 2, 3}, 3),
      .output_shapes = {Shape{2, 5, 8}},
      .weights = {{"kernel", Shape{2, 3, 8}}},
      .count_params = 48,
  });
  expect_layer_conforms({
      .make = [] { return std::make_shared<EinsumDense>("...b,bc->...c", std::vector<int64_t>{4}, EinsumDenseOptions{.bias_axes = "c"}); },
      .inputs = random_tensor(Shape{3, 2, 6}, 4),
      .output_shapes = {Shape{3, 2, 4}},
      .weights = {{"kernel", Shape{6, 4}}, {"bias", Shape{4}}},
      .count_params = 28,
  });
}

// out[b, t, n, h] = sum_c x[b, t, c] w[c, n, h] + bias[n, h], by loops in double.
TEST(EinsumDenseTest, MatchesTheEinsumByLoops) {
  EinsumDense layer("abc,cde->abde", {-1, 3, 4},
                    {.bias_axes = "de", .bias_initializer = initializers::random_uniform(-1, 1, 5)});
  const Tensor x = random_tensor(Shape{2, 5, 6}, 6);
  const Tensor y = layer(x);
  ASSERT_EQ(y.shape(), Shape({2, 5, 3, 4}));
  const auto vx = x.to_vector<double>(), vw = layer.kernel().value().to_vector<double>(),
             vb = layer.bias().value().to_vector<double>(), vy = y.to_vector<double>();
  for (int64_t bt = 0; bt < 10; ++bt) {
    for (int64_t nh = 0; nh < 12; ++nh) {
      double s = vb[nh];
      for (int64_t c = 0; c < 6; ++c) s += vx[bt * 6 + c] * vw[c * 12 + nh];
      EXPECT_NEAR(vy[bt * 12 + nh], s, 1e-5);
    }
  }
  // "abcd,cde->abe" contracts two axes: the same as a Dense on the flattened heads.
  EinsumDense out("abcd,cde->abe", {-1, 7}, {.activation = "relu", .bias_axes = "e"});
  const Tensor z = out(y);
  Dense dense(7, {.activation = "relu"});
  dense.build_from(ops::reshape(y, {2, 5, 12}));
  dense.kernel().assign(ops::reshape(out.kernel().value(), {12, 7}));
  dense.bias().assign(out.bias().value());
  EXPECT_TRUE(tensors_near(z, dense(ops::reshape(y, {2, 5, 12})), 1e-6, 1e-6));
}

TEST(EinsumDenseTest, BiasFollowsKerasShapeRule) {
  // The bias spans the output from its first bias letter on, 1 on letters not listed.
  EinsumDense layer("abc,cde->abde", {-1, 3, 4}, {.bias_axes = "d"});
  layer.build_from(random_tensor(Shape{2, 5, 6}, 7));
  EXPECT_EQ(layer.bias().shape(), Shape({3, 1}));
  EinsumDense free_bias("abc,cd->abd", {-1, 4}, {.bias_axes = "bd"});
  free_bias.build_from(random_tensor(Shape{2, 5, 6}, 8));
  EXPECT_EQ(free_bias.bias().shape(), Shape({5, 4}));
}

TEST(EinsumDenseTest, GradientsMatchNumerical) {
  EinsumDense layer("abcd,cde->abe", {-1, 3}, {.activation = "tanh", .bias_axes = "e"});
  const Tensor x = random_tensor(Shape{2, 3, 2, 4}, 9);
  layer.build_from(x);
  expect_gradients_match([&](const std::vector<Tensor>& in) { return layer(in[0]); },
                         {x.clone(), layer.kernel().value(), layer.bias().value()});
}

TEST(EinsumDenseTest, VarianceScalingUsesTheKernelsInputAndOutputAxes) {
  // glorot_uniform on an (8, 4, 16) kernel: fans 8 and 64 (Keras 3's input_axes /
  // output_axes), so the limit is sqrt(6 / 72) = 0.289; the convolution rule would
  // give fans 32 and 128, limit 0.194.
  EinsumDense layer("abc,cde->abde", {-1, 4, 16});
  layer.build_from(random_tensor(Shape{1, 1, 8}, 10));
  const auto w = layer.kernel().value().to_vector<double>();
  double largest = 0;
  for (double v : w) largest = std::max(largest, std::abs(v));
  EXPECT_LE(largest, std::sqrt(6.0 / 72));
  EXPECT_GT(largest, 0.25);
  // The initializer the config reports is the one given (no axes), as Keras.
  EXPECT_EQ(layer.get_config()["kernel_initializer"],
            nlohmann::json::parse(R"({"class_name": "GlorotUniform", "config": {"seed": null}})"));
  // Initializers outside the family are unchanged; BERT's truncated normal stays within 2 sigma.
  EinsumDense bert("abc,cde->abde", {-1, 4, 16}, {.kernel_initializer = initializers::truncated_normal(0, 0.02)});
  bert.build_from(random_tensor(Shape{1, 1, 8}, 10));
  for (double v : bert.kernel().value().to_vector<double>()) EXPECT_LE(std::abs(v), 0.04);
}

TEST(EinsumDenseTest, InitializerFanAxesRoundTripThroughConfigs) {
  const Initializer init = initializers::he_normal(3).with_fan_axes({0}, {1, 2});
  const nlohmann::json config = init.get_config();
  EXPECT_EQ(config, nlohmann::json::parse(
                        R"({"class_name": "HeNormal", "config": {"seed": 3, "input_axes": [0], "output_axes": [1, 2]}})"));
  const Initializer back = Initializer::from_config(config);
  EXPECT_TRUE(tensors_near(back(Shape{8, 4, 16}), init(Shape{8, 4, 16}), 0, 0));
  EXPECT_EQ(initializers::zeros().with_fan_axes({0}, {1}).get_config(), initializers::zeros().get_config());
}

TEST(EinsumDenseTest, ConfigIsKerasShaped) {
  EinsumDense layer("abc,cde->abde", {-1, 2, 3}, {.bias_axes = "de", .name = "query"});
  EXPECT_EQ(layer.get_config(), nlohmann::json::parse(R"({
      "name": "query", "trainable": true, "dtype": "float32", "equation": "abc,cde->abde", "output_shape": [null, 2, 3],
      "activation": "linear", "bias_axes": "de",
      "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": null}},
      "bias_initializer": {"class_name": "Zeros", "config": {}}})"));
  // As Keras writes it: an int output_shape, a null bias_axes.
  const auto from_keras = EinsumDense::from_config(nlohmann::json::parse(
      R"({"equation": "ab,bc->ac", "output_shape": 64, "bias_axes": null, "activation": null})"));
  EXPECT_EQ(from_keras->partial_output_shape(), std::vector<int64_t>{64});
  EXPECT_EQ(from_keras->get_config()["bias_axes"], nullptr);
}

TEST(EinsumDenseTest, Errors) {
  auto make = [](const char* equation, std::vector<int64_t> shape, std::string bias = "") {
    return [=] { EinsumDense layer(equation, shape, {.bias_axes = bias}); };
  };
  EXPECT_THAT(make("ab,cb->ac", {4}),
              ThrowsMessage<ValueError>(HasSubstr(
                  "EinsumDense: unsupported equation 'ab,cb->ac': the kernel must be the contracted letters, then the "
                  "output ones. EinsumDense supports the equations one matmul computes: "
                  "'<free><contracted>,<contracted><out>-><free><out>'")));
  EXPECT_THAT(make("abc,cd->adb", {4, -1}),
              ThrowsMessage<ValueError>(HasSubstr("the output must be the free letters, then the kernel's output ones")));
  EXPECT_THAT(make("abc,bcd->abd", {-1, 4}),
              ThrowsMessage<ValueError>(HasSubstr("letter 'b' is in all three specs")));
  EXPECT_THAT(make("abc,cd->ad", {4}), ThrowsMessage<ValueError>(HasSubstr("input letter 'b' is summed away")));
  EXPECT_THAT(make("ab,bc...->ac...", {4}),
              ThrowsMessage<ValueError>(HasSubstr("EinsumDense: invalid equation 'ab,bc...->ac...'")));
  EXPECT_THAT(make("...b,bc->c", {4}), ThrowsMessage<ValueError>(HasSubstr("'...' must lead both")));
  EXPECT_THAT(make("ab,bc->acd", {4, 2}),
              ThrowsMessage<ValueError>(HasSubstr("output letter 'd' is in neither the input 'ab' nor the kernel 'bc'")));
  EXPECT_THAT(make("abc,cde->abde", {2, 3}),
              ThrowsMessage<ValueError>(HasSubstr(
                  "EinsumDense: expected output_shape with 3 dims for equation 'abc,cde->abde' (the output 'abde' "
                  "without its batch axis). Received: output_shape=(2, 3)")));
  EXPECT_THAT(make("abc,cde->abde", {-1, -1, 3}),
              ThrowsMessage<ValueError>(HasSubstr("output_shape must give the size of kernel letter 'd'")));
  EXPECT_THAT(make("ab,bc->ac", {4}, "x"),
              ThrowsMessage<ValueError>(HasSubstr(
                  "EinsumDense: bias dimension 'x' was requested, but is not part of the output spec 'ac'")));
  EinsumDense layer("abc,cde->abde", {-1, 2, 3}, {.name = "query"});
  EXPECT_THAT([&] { layer(random_tensor(Shape{2, 8}, 1)); },
              ThrowsMessage<ValueError>(HasSubstr("Input 0 of layer \"query\" is incompatible with the layer: "
                                                  "expected ndim=3, found ndim=2. Full shape received: (2, 8)")));
  layer.build_from(random_tensor(Shape{2, 5, 8}, 1));
  EXPECT_THAT([&] { layer(random_tensor(Shape{2, 5, 9}, 1)); },
              ThrowsMessage<ValueError>(HasSubstr("Input 0 of layer \"query\" is incompatible with the layer: "
                                                  "expected axis -1 of input shape to have value 8, but received "
                                                  "input with shape (2, 5, 9)")));
  EinsumDense shared("abc,cd->abd", {6, 4}, {.name = "seq"});
  EXPECT_THAT([&] { shared(random_tensor(Shape{2, 5, 3}, 1)); },
              ThrowsMessage<ShapeError>(HasSubstr(
                  "seq: input shape and output shape do not match at shared dimension 'b': input (2, 5, 3) has 5, "
                  "output_shape (6, 4) has 6")));
}

}  // namespace
}  // namespace chorus::layers
