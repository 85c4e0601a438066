#include "chorus/layers/concatenate.h"

#include "chorus/autograd/tape.h"
#include "chorus/ops/ops.h"
#include "tests/layers/layer_conformance.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

TEST(ConcatenateTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<Concatenate>(); },
      .inputs = Tree::list({random_tensor(Shape{4, 3}, 1), random_tensor(Shape{4, 5}, 2)}),
      .output_shapes = {Shape{4, 8}},
  });
  expect_layer_conforms({
      .make = [] { return std::make_shared<Concatenate>(ConcatenateOptions{.axis = 1}); },
      .inputs = Tree::list(
          {random_tensor(Shape{2, 1, 3}, 1), random_tensor(Shape{2, 2, 3}, 2), random_tensor(Shape{2, 4, 3}, 3)}),
      .output_shapes = {Shape{2, 7, 3}},
  });
}

TEST(ConcatenateTest, MatchesAReferenceLoop) {
  Concatenate concat;
  const Tensor a = random_tensor(Shape{7, 2}, 1), b = random_tensor(Shape{9, 3}, 2).first_axis_slice(1, 8);
  const auto va = a.to_vector<float>(), vb = b.to_vector<float>();
  std::vector<float> expected;
  for (int r = 0; r < 7; ++r) {
    for (int c = 0; c < 2; ++c) expected.push_back(va[r * 2 + c]);
    for (int c = 0; c < 3; ++c) expected.push_back(vb[r * 3 + c]);
  }
  EXPECT_TRUE(tensors_near(concat(Tree::list({a, b})).tensor(), from_values(expected, Shape{7, 5}), 0, 0));
}

TEST(ConcatenateTest, GradientsSplitBackToEachInput) {
  Concatenate concat;
  Tensor a = random_tensor(Shape{2, 2}, 1), b = random_tensor(Shape{2, 1}, 2);
  autograd::GradientTape tape;
  tape.watch(a);
  tape.watch(b);
  const Tensor y = concat(Tree::list({a, b})).tensor();
  const auto g = tape.gradient(ops::sum(y * from_values({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, Shape{2, 3})), {a, b});
  EXPECT_EQ(g[0].to_vector<float>(), (std::vector<float>{1, 2, 4, 5}));
  EXPECT_EQ(g[1].to_vector<float>(), (std::vector<float>{3, 6}));
}

TEST(ConcatenateTest, Config) {
  EXPECT_EQ(Concatenate({.axis = 1, .name = "cat"}).get_config(),
            nlohmann::json::parse(R"({"name": "cat", "trainable": true, "dtype": "float32", "axis": 1})"));
}

TEST(ConcatenateTest, Errors) {
  Concatenate concat({.name = "concatenate_1"});
  EXPECT_THAT(
      [&] {
        concat(random_tensor(Shape{2, 3}, 1));
      },
      ThrowsMessage<ValueError>(HasSubstr("concatenate_1: expected a list of at least 1 tensor as input, got")));
  EXPECT_THAT([&] { concat(Tree(Tree::List{})); },
              ThrowsMessage<ValueError>(HasSubstr("concatenate_1: expected a list of at least 1 tensor as input")));
  EXPECT_THAT(
      [&] {
        concat(Tree::list({random_tensor(Shape{4, 3}, 1), random_tensor(Shape{5, 2}, 1)}));
      },
      ThrowsMessage<ShapeError>(HasSubstr(
          "concatenate_1: expected inputs with matching shapes except on axis -1, got shapes (4, 3) and (5, 2)")));
  EXPECT_THAT(
      [&] {
        concat(Tree::list({random_tensor(Shape{4, 3}, 1), random_tensor(Shape{4, 3, 1}, 1)}));
      },
      ThrowsMessage<ShapeError>(HasSubstr("got shapes (4, 3) and (4, 3, 1)")));
  Concatenate far({.axis = 2, .name = "far"});
  EXPECT_THAT(
      [&] {
        far(Tree::list({random_tensor(Shape{4, 3}, 1)}));
      },
      ThrowsMessage<IndexError>(HasSubstr("far: axis 2 is out of range for inputs of shape (4, 3)")));
  EXPECT_THAT(
      [&] {
        concat(Tree::list({random_tensor(Shape{4, 3}, 1), from_values<int32_t>({1, 2, 3, 4}, Shape{4, 1})}));
      },
      ThrowsMessage<DTypeError>(HasSubstr("concatenate")));
}

}  // namespace
}  // namespace chorus::layers
