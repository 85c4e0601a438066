#include "chorus/layers/activations.h"

#include <cmath>

#include "chorus/autograd/tape.h"
#include "chorus/ops/ops.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::activations {
namespace {

using namespace testing::test_names;

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double softplus_ref(double x) { return std::log1p(std::exp(x)); }
double elu_ref(double x, double alpha) { return x > 0 ? x : alpha * std::expm1(x); }
double relu6_ref(double x) { return std::min(std::max(x, 0.0), 6.0); }

// Inputs spanning the interesting range, at an odd size.
Tensor inputs() { return random_tensor(Shape{7, 13}, 11, -8, 8); }

Tensor apply_ref(const Tensor& x, double (*f)(double)) {
  std::vector<float> out;
  for (double v : x.to_vector<double>()) out.push_back(static_cast<float>(f(v)));
  return from_values(out, x.shape());
}

TEST(ActivationsTest, ElementwiseMatchReferenceFormulas) {
  struct Case {
    const char* name;
    double (*ref)(double);
  };
  const Case cases[] = {
      {"linear", [](double x) { return x; }},
      {"relu", [](double x) { return std::max(x, 0.0); }},
      {"relu6", relu6_ref},
      {"leaky_relu", [](double x) { return x >= 0 ? x : 0.2 * x; }},
      {"sigmoid", sigmoid_ref},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"gelu", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"softplus", softplus_ref},
      {"softsign", [](double x) { return x / (1 + std::abs(x)); }},
      {"silu", [](double x) { return x * sigmoid_ref(x); }},
      {"swish", [](double x) { return x * sigmoid_ref(x); }},
      {"elu", [](double x) { return elu_ref(x, 1.0); }},
      {"selu", [](double x) { return 1.05070098 * elu_ref(x, 1.67326324); }},
      {"exponential", [](double x) { return std::exp(x); }},
      {"hard_sigmoid", [](double x) { return relu6_ref(x + 3) / 6; }},
      {"hard_silu", [](double x) { return x * relu6_ref(x + 3) / 6; }},
      {"hard_swish", [](double x) { return x * relu6_ref(x + 3) / 6; }},
      {"mish", [](double x) { return x * std::tanh(softplus_ref(x)); }},
      {"log_sigmoid", [](double x) { return -softplus_ref(-x); }},
  };
  const Tensor x = inputs();
  for (const Case& c : cases) {
    EXPECT_TRUE(tensors_near(get(c.name)(x), apply_ref(x, c.ref), 1e-5, 1e-5)) << c.name;
  }
}

TEST(ActivationsTest, SoftmaxAndLogSoftmaxActOnTheLastAxis) {
  const Tensor x = inputs();
  const auto v = x.to_vector<double>();
  std::vector<float> soft, log_soft;
  for (int r = 0; r < 7; ++r) {
    double m = -1e9, s = 0;
    for (int c = 0; c < 13; ++c) m = std::max(m, v[r * 13 + c]);
    for (int c = 0; c < 13; ++c) s += std::exp(v[r * 13 + c] - m);
    for (int c = 0; c < 13; ++c) {
      soft.push_back(static_cast<float>(std::exp(v[r * 13 + c] - m) / s));
      log_soft.push_back(static_cast<float>(v[r * 13 + c] - m - std::log(s)));
    }
  }
  EXPECT_TRUE(tensors_near(get("softmax")(x), from_values(soft, x.shape()), 1e-6, 1e-5));
  EXPECT_TRUE(tensors_near(get("log_softmax")(x), from_values(log_soft, x.shape()), 1e-5, 1e-5));
}

TEST(ActivationsTest, GeluDefaultsToTheExactFormAndOffersTheTanhOne) {
  const Tensor x = inputs();
  const Tensor tanh_form = apply_ref(
      x, [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); });
  EXPECT_TRUE(tensors_near(gelu(x, /*approximate=*/true), tanh_form, 1e-5, 1e-5));
  EXPECT_FALSE(tensors_near(gelu(x), tanh_form, 1e-6, 0));
}

TEST(ActivationsTest, GradientsMatchNumerical) {
  // Away from the kinks of relu-like functions, where central differences are unreliable.
  Tensor x = random_tensor(Shape{3, 5}, 5, 0.1, 2.0);
  float* d = x.data<float>();
  for (int i = 0; i < 15; i += 2) d[i] = -d[i];
  for (const std::string& name : names()) {
    if (name == "linear") continue;  // a view; its gradient is checked via layers
    expect_gradients_match([&](const std::vector<Tensor>& in) { return get(name)(in[0]); }, {x.clone()});
  }
}

TEST(ActivationsTest, EluHasFiniteGradientsForLargeInputs) {
  Tensor x = from_values({100.f, -100.f, 0.5f});
  autograd::GradientTape tape;
  tape.watch(x);
  const Tensor y = elu(x);
  const auto g = tape.gradient(y, {x})[0].to_vector<float>();
  EXPECT_EQ(g[0], 1.0f);
  EXPECT_NEAR(g[1], 0.0f, 1e-30);
  EXPECT_FALSE(std::isnan(g[1]));
}

TEST(ActivationsTest, LinearReturnsAFreshHandleOnTheSameData) {
  const Tensor x = inputs();
  const Tensor y = linear(x);
  EXPECT_FALSE(y.same(x));
  EXPECT_TRUE(y.shares_storage(x));
}

TEST(ActivationTypeTest, NamesAreCanonicalised) {
  EXPECT_EQ(Activation().name(), "linear");
  EXPECT_TRUE(Activation().is_linear());
  EXPECT_EQ(Activation("swish").name(), "silu");
  EXPECT_EQ(Activation("hard_swish").name(), "hard_silu");
  EXPECT_EQ(Activation(std::string("relu")).get_config(), "relu");
  EXPECT_EQ(Activation::from_config(nullptr).name(), "linear");
  EXPECT_EQ(Activation::from_config("tanh").name(), "tanh");
  const Tensor x = inputs();
  EXPECT_TRUE(tensors_near(Activation("relu")(x), relu(x), 0, 0));
}

TEST(ActivationTypeTest, HoldsACustomFunction) {
  const Activation twice([](const Tensor& x) { return x * 2.0; }, "twice");
  EXPECT_EQ(twice.name(), "twice");
  EXPECT_EQ(twice(from_values({1.f, 2.f})).to_vector<float>(), (std::vector<float>{2.f, 4.f}));
}

TEST(ActivationTypeTest, Errors) {
  EXPECT_THAT(
      [] { Activation bad("rleu"); },
      ThrowsMessage<ValueError>(HasSubstr("Unknown activation 'rleu'. Expected one of: elu, exponential, gelu")));
  EXPECT_THAT([] { get("nope"); }, ThrowsMessage<ValueError>(HasSubstr("Unknown activation 'nope'")));
  EXPECT_THAT([] { Activation::from_config(3); },
              ThrowsMessage<ValueError>(HasSubstr("Activation: expected an activation name or null. Received: 3")));
  EXPECT_THAT([] { Activation empty(Function(), "custom"); },
              ThrowsMessage<ValueError>(HasSubstr("Activation 'custom': expected a callable, got an empty function")));
}

}  // namespace
}  // namespace chorus::activations
