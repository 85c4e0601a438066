#include "chorus/layers/add.h"

#include "chorus/autograd/tape.h"
#include "chorus/ops/ops.h"
#include "tests/layers/layer_conformance.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

TEST(AddTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<Add>(); },
      .inputs =
          Tree::list({random_tensor(Shape{4, 3}, 1), random_tensor(Shape{4, 3}, 2), random_tensor(Shape{4, 3}, 3)}),
      .output_shapes = {Shape{4, 3}},
  });
  // Broadcasting, and a lower-rank input expanded after the batch axis: (2, 3) -> (2, 1, 3).
  expect_layer_conforms({
      .make = [] { return std::make_shared<Add>(); },
      .inputs = Tree::list({random_tensor(Shape{2, 5, 3}, 1), random_tensor(Shape{2, 3}, 2)}),
      .output_shapes = {Shape{2, 5, 3}},
  });
}

TEST(AddTest, SumsElementwise) {
  Add add;
  const Tensor a = random_tensor(Shape{7, 3}, 1), b = random_tensor(Shape{9, 3}, 2).first_axis_slice(2, 9);
  const Tensor c = random_tensor(Shape{7, 1}, 3);
  const auto va = a.to_vector<float>(), vb = b.to_vector<float>(), vc = c.to_vector<float>();
  std::vector<float> expected;
  for (int r = 0; r < 7; ++r) {
    for (int k = 0; k < 3; ++k) expected.push_back(va[r * 3 + k] + vb[r * 3 + k] + vc[r]);
  }
  EXPECT_TRUE(tensors_near(add(Tree::list({a, b, c})).tensor(), from_values(expected, Shape{7, 3}), 1e-6, 1e-6));
}

TEST(AddTest, OneInputIsAFreshHandleOfIt) {
  Add add;
  const Tensor a = random_tensor(Shape{2, 2}, 1);
  const Tensor y = add(Tree::list({a})).tensor();
  EXPECT_FALSE(y.same(a));
  EXPECT_TRUE(tensors_near(y, a, 0, 0));
}

TEST(AddTest, GradientsReachEveryInput) {
  Add add;
  Tensor a = random_tensor(Shape{2, 3}, 1), b = random_tensor(Shape{2, 1}, 2);
  autograd::GradientTape tape;
  tape.watch(a);
  tape.watch(b);
  const auto g = tape.gradient(ops::sum(add(Tree::list({a, b})).tensor()), {a, b});
  EXPECT_TRUE(tensors_near(g[0], ones(Shape{2, 3}), 0, 0));
  EXPECT_TRUE(tensors_near(g[1], full(Shape{2, 1}, 3.0), 0, 0));
}

TEST(AddTest, Config) {
  EXPECT_EQ(Add({.name = "sum"}).get_config(), nlohmann::json::parse(R"({"name": "sum", "trainable": true, "dtype": "float32"})"));
}

TEST(AddTest, Errors) {
  Add add({.name = "add_2"});
  EXPECT_THAT(
      [&] {
        add(random_tensor(Shape{2, 3}, 1));
      },
      ThrowsMessage<ValueError>(HasSubstr("add_2: expected a list of at least 1 tensor as input")));
  EXPECT_THAT(
      [&] {
        add(Tree::list({random_tensor(Shape{4, 3}, 1), random_tensor(Shape{5, 3}, 1)}));
      },
      ThrowsMessage<ShapeError>(
          HasSubstr("add_2: expected inputs with the same batch size, got shapes (4, 3) and (5, 3)")));
  EXPECT_THAT(
      [&] {
        add(Tree::list({random_tensor(Shape{4, 3}, 1), random_tensor(Shape{4, 5}, 1)}));
      },
      ThrowsMessage<ShapeError>(
          HasSubstr("add_2: expected inputs whose shapes broadcast, got shapes (4, 3) and (4, 5)")));
  EXPECT_THAT(
      [&] {
        add(Tree::list({scalar(1.0), scalar(2.0)}));
      },
      ThrowsMessage<ShapeError>(HasSubstr("add_2: expected inputs with a batch axis, got shape ()")));
}

}  // namespace
}  // namespace chorus::layers
