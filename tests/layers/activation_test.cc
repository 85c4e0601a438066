#include "chorus/layers/activation.h"

#include "chorus/autograd/tape.h"
#include "chorus/ops/ops.h"
#include "tests/layers/layer_conformance.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

TEST(ActivationLayerTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<Activation>("softmax"); },
      .inputs = random_tensor(Shape{3, 4}, 1),
      .output_shapes = {Shape{3, 4}},
  });
  expect_layer_conforms({
      .make = [] { return std::make_shared<Activation>(activations::Activation()); },
      .inputs = random_tensor(Shape{2, 5, 3}, 2),
      .output_shapes = {Shape{2, 5, 3}},
  });
}

TEST(ActivationLayerTest, AppliesItsFunction) {
  Activation relu("relu");
  const Tensor x = random_tensor(Shape{7, 3}, 3);
  std::vector<float> expected;
  for (float v : x.to_vector<float>()) expected.push_back(std::max(v, 0.0f));
  EXPECT_TRUE(tensors_near(relu(x), from_values(expected, x.shape()), 0, 0));
}

TEST(ActivationLayerTest, LinearPassesGradientsThrough) {
  Activation linear("linear");
  Tensor x = random_tensor(Shape{2, 3}, 4);
  autograd::GradientTape tape;
  tape.watch(x);
  const Tensor y = linear(x);
  EXPECT_FALSE(y.same(x));
  EXPECT_TRUE(tensors_near(tape.gradient(ops::sum(y * 3.0), {x})[0], full(Shape{2, 3}, 3.0), 0, 0));
}

TEST(ActivationLayerTest, ConfigIsKerasShaped) {
  EXPECT_EQ(Activation("swish", {.name = "act"}).get_config(),
            nlohmann::json::parse(R"({"name": "act", "trainable": true, "dtype": "float32", "activation": "silu"})"));
  EXPECT_EQ(Activation::from_config(nlohmann::json::parse(R"({"activation": "gelu"})"))->activation().name(), "gelu");
}

TEST(ActivationLayerTest, Errors) {
  EXPECT_THAT([] { Activation bad("softmaxx"); },
              ThrowsMessage<ValueError>(HasSubstr("Unknown activation 'softmaxx'. Expected one of:")));
  Activation act("tanh", {.name = "act"});
  EXPECT_THAT(
      [&] {
        act(Tree::list({random_tensor(Shape{1}, 1), random_tensor(Shape{1}, 2)}));
      },
      ThrowsMessage<ValueError>(HasSubstr("act: expected a single tensor as input")));
}

}  // namespace
}  // namespace chorus::layers
