#include "chorus/layers/dense.h"

#include <cmath>

#include "chorus/autograd/tape.h"
#include "chorus/ops/ops.h"
#include "tests/layers/layer_conformance.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

// y[r, u] = act(sum_k x[r, k] w[k, u] + b[u]) over the rows of a (rows, in) view of x.
Tensor dense_ref(const Tensor& x, const Tensor& w, const Tensor& b, double (*act)(double)) {
  const int64_t in = w.dim(0), units = w.dim(1), rows = x.numel() / in;
  const auto vx = x.to_vector<double>(), vw = w.to_vector<double>();
  const auto vb = b.defined() ? b.to_vector<double>() : std::vector<double>(static_cast<size_t>(units), 0.0);
  std::vector<float> out;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t u = 0; u < units; ++u) {
      double s = vb[u];
      for (int64_t k = 0; k < in; ++k) s += vx[r * in + k] * vw[k * units + u];
      out.push_back(static_cast<float>(act(s)));
    }
  }
  Shape shape = x.shape();
  shape[shape.rank() - 1] = units;
  return from_values(out, shape);
}

double identity(double x) { return x; }
double relu_ref(double x) { return std::max(x, 0.0); }

TEST(DenseTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<Dense>(5, DenseOptions{.activation = "relu"}); },
      .inputs = random_tensor(Shape{4, 7}, 1),
      .output_shapes = {Shape{4, 5}},
      .weights = {{"kernel", Shape{7, 5}}, {"bias", Shape{5}}},
      .count_params = 7 * 5 + 5,
  });
  expect_layer_conforms({
      .make = [] { return std::make_shared<Dense>(3, DenseOptions{.use_bias = false}); },
      .inputs = random_tensor(Shape{2, 6, 4}, 2),
      .output_shapes = {Shape{2, 6, 3}},
      .weights = {{"kernel", Shape{4, 3}}},
      .count_params = 12,
  });
}

TEST(DenseTest, ForwardMatchesAReferenceLoop) {
  for (int64_t batch : {1, 7, 1023}) {
    Dense dense(9, {.activation = "relu", .bias_initializer = initializers::random_uniform(-1, 1, 3)});
    const Tensor x = random_tensor(Shape{batch, 13}, 10 + static_cast<uint64_t>(batch));
    const Tensor y = dense(x);
    EXPECT_TRUE(tensors_near(y, dense_ref(x, dense.kernel(), dense.bias(), relu_ref), 1e-5, 1e-5)) << batch;
  }
}

TEST(DenseTest, AppliesToTheLastAxisOfNDInputsAndViews) {
  Dense dense(4, {.bias_initializer = "ones"});
  const Tensor big = random_tensor(Shape{6, 3, 5}, 4);
  const Tensor x = big.first_axis_slice(2, 5);  // a view: (3, 3, 5)
  const Tensor y = dense(x);
  EXPECT_EQ(y.shape(), (Shape{3, 3, 4}));
  EXPECT_TRUE(tensors_near(y, dense_ref(x, dense.kernel(), dense.bias(), identity), 1e-5, 1e-5));
}

TEST(DenseTest, CastsIntegerInputsToTheKernelDtype) {
  Dense dense(2);
  const Tensor x = from_values<int32_t>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const Tensor y = dense(x);
  EXPECT_EQ(y.dtype(), kFloat32);
  EXPECT_TRUE(tensors_near(y, dense_ref(ops::cast(x, kFloat32), dense.kernel(), dense.bias(), identity), 1e-5, 1e-5));
}

TEST(DenseTest, GradientsMatchNumerical) {
  Dense dense(3, {.activation = "tanh", .bias_initializer = initializers::random_uniform(-1, 1, 8)});
  const Tensor x = random_tensor(Shape{5, 4}, 6);
  dense.build_from(x);
  // The check perturbs the tensors it is given in place: pass the weights' own values.
  expect_gradients_match([&](const std::vector<Tensor>& in) { return dense(in[0]); },
                         {x.clone(), dense.kernel().value(), dense.bias().value()});
}

TEST(DenseTest, KernelAndBiasReceiveGradientsFromATape) {
  Dense dense(2);
  const Tensor x = random_tensor(Shape{3, 4}, 9);
  dense.build_from(x);
  autograd::GradientTape tape;
  const Tensor loss = ops::sum(dense(x));
  const auto grads = tape.gradient(loss, {dense.kernel().value(), dense.bias().value()});
  // d sum(xW + b) / dW[k, u] = sum_r x[r, k]; / db[u] = rows.
  const Tensor col_sums = ops::sum(x, 0, /*keepdims=*/true);
  EXPECT_TRUE(tensors_near(grads[0], ops::transpose(ops::concatenate({col_sums, col_sums}, 0)), 1e-6, 1e-6));
  EXPECT_TRUE(tensors_near(grads[1], from_values({3.f, 3.f}), 0, 0));
}

TEST(DenseTest, ConfigIsKerasShaped) {
  Dense dense(
      16,
      {.activation = "softmax", .use_bias = false, .kernel_initializer = initializers::he_normal(5), .name = "head"});
  const nlohmann::json config = dense.get_config();
  EXPECT_EQ(config, nlohmann::json::parse(R"({
      "name": "head", "trainable": true, "dtype": "float32", "units": 16, "activation": "softmax", "use_bias": false,
      "kernel_initializer": {"class_name": "HeNormal", "config": {"seed": 5}},
      "bias_initializer": {"class_name": "Zeros", "config": {}}})"));
  EXPECT_EQ(Dense(1).get_config()["activation"], "linear");
  // Keras writes null for no activation; from_config accepts it, and a non-trainable flag.
  auto from_keras =
      Dense::from_config(nlohmann::json::parse(R"({"units": 4, "activation": null, "trainable": false})"));
  EXPECT_EQ(from_keras->units(), 4);
  EXPECT_TRUE(from_keras->activation().is_linear());
  EXPECT_FALSE(from_keras->trainable());
}

TEST(DenseTest, AutomaticNamesCountUp) {
  Layer::reset_names();
  Dense a(1), b(1), c(1, {.name = "mine"});
  EXPECT_EQ(a.name(), "dense");
  EXPECT_EQ(b.name(), "dense_1");
  EXPECT_EQ(c.name(), "mine");
  b.build_from(random_tensor(Shape{2, 3}, 1));
  EXPECT_EQ(b.kernel().path(), "dense_1/kernel");
}

TEST(DenseTest, Errors) {
  EXPECT_THAT([] { Dense bad(0); },
              ThrowsMessage<ValueError>(HasSubstr("Dense: expected units > 0. Received: units=0")));
  EXPECT_THAT([] { Dense bad(4, {.activation = "bogus"}); },
              ThrowsMessage<ValueError>(HasSubstr("Unknown activation 'bogus'")));
  Dense dense(10, {.name = "dense_1"});
  dense.build_from(random_tensor(Shape{64, 784}, 1));
  EXPECT_THAT(
      [&] {
        dense(random_tensor(Shape{64, 785}, 1));
      },
      ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"dense_1\" is incompatible with the layer: expected axis -1 "
                                      "of input shape to have value 784, but received input with shape (64, 785)")));
  EXPECT_THAT([&] { dense(random_tensor(Shape{784}, 1)); },
              ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"dense_1\" is incompatible with the layer: expected "
                                              "min_ndim=2, found ndim=1. Full shape received: (784,)")));
  // The constructor's spec (min_ndim=2) stops a rank-1 input before build().
  Dense unbuilt(3, {.name = "d"});
  EXPECT_THAT([&] { unbuilt(random_tensor(Shape{5}, 1)); },
              ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"d\" is incompatible with the layer: expected "
                                              "min_ndim=2, found ndim=1. Full shape received: (5,)")));
  EXPECT_FALSE(unbuilt.built());
  EXPECT_THAT(
      [&] {
        dense(Tree::list({random_tensor(Shape{1, 784}, 1)}));
      },
      ThrowsMessage<ValueError>(HasSubstr("dense_1: expected a single tensor as input, got")));
  EXPECT_THAT([] { Dense::from_config(nlohmann::json::parse(R"({"activation": "relu"})")); },
              ThrowsMessage<ValueError>(Eq("Dense: config is missing 'units'")));
  EXPECT_THAT([] { Dense::from_config(nlohmann::json::parse(R"({"units": "ten"})")); },
              ThrowsMessage<ValueError>(Eq("Dense: config key 'units': expected an integer, got \"ten\" (a string)")));
}

// A key Dense does not take is an error naming it (Keras 3 raises on an unexpected
// constructor argument), with the key it most likely meant; the keys Keras writes for
// features chorus lacks are accepted while unset.
TEST(DenseTest, FromConfigRejectsUnexpectedKeys) {
  EXPECT_THAT([] { Dense::from_config(nlohmann::json::parse(R"({"unitz": 10})")); },
              ThrowsMessage<ValueError>(Eq("Dense: config is missing 'units'")));
  EXPECT_THAT([] { Dense::from_config(nlohmann::json::parse(R"({"units": 10, "unitz": 10})")); },
              ThrowsMessage<ValueError>(Eq("Dense: unexpected config key 'unitz' (did you mean 'units'?)")));
  EXPECT_THAT([] { Dense::from_config(nlohmann::json::parse(R"({"units": 10, "filters": 3})")); },
              ThrowsMessage<ValueError>(Eq("Dense: unexpected config key 'filters'")));
  EXPECT_THAT([] { Dense::from_config(nlohmann::json::parse(R"({"units": 10, "trainable": "yes"})")); },
              ThrowsMessage<ValueError>(Eq("Dense: config key 'trainable': expected a boolean, got \"yes\" (a string)")));
  EXPECT_THAT(
      [] { Dense::from_config(nlohmann::json::parse(R"({"units": 10, "kernel_regularizer": {"class_name": "L2"}})")); },
      ThrowsMessage<ValueError>(Eq("Dense: kernel_regularizer={\"class_name\":\"L2\"} is not supported")));
  const auto keras = Dense::from_config(nlohmann::json::parse(R"({"units": 10, "kernel_regularizer": null,
      "bias_regularizer": null, "kernel_constraint": null, "bias_constraint": null, "activity_regularizer": null})"));
  EXPECT_EQ(keras->units(), 10);
}

// Config fields are read exactly: json would truncate 10.7 to 10 and wrap -1 into an
// unsigned seed (core/config_reader.h's ConfigReader, which every built-in layer uses).
TEST(DenseTest, FromConfigRefusesValuesThatDoNotFitTheFieldsType) {
  EXPECT_THAT([] { Dense::from_config(nlohmann::json::parse(R"({"units": 10.7, "name": "head"})")); },
              ThrowsMessage<ValueError>(
                  Eq("Dense: config key 'units': expected an integer, got 10.7 (a float)")));
  EXPECT_THAT([] { Dense::from_config(nlohmann::json::parse(R"({"units": 9223372036854775808})")); },
              ThrowsMessage<ValueError>(
                  Eq("Dense: config key 'units': expected an integer, got 9223372036854775808 (an integer)")));
  EXPECT_THAT([] { Dense::from_config(nlohmann::json::parse(R"({"units": 4, "use_bias": 1})")); },
              ThrowsMessage<ValueError>(Eq("Dense: config key 'use_bias': expected a boolean, got 1 (an integer)")));
  EXPECT_EQ(Dense::from_config(nlohmann::json::parse(R"({"units": 4.0})"))->get_config()["units"], 4);
}

}  // namespace
}  // namespace chorus::layers
