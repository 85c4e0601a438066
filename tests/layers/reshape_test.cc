#include "chorus/layers/reshape.h"

#include "tests/layers/layer_conformance.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

TEST(ReshapeTest, Conformance) {
  expect_layer_conforms({
      .make =
          [] {
            return std::make_shared<Reshape>(std::vector<int64_t>{3, 4});
          },
      .inputs = random_tensor(Shape{5, 12}, 1),
      .output_shapes = {Shape{5, 3, 4}},
  });
  // A -1 is inferred from the example size, even for a 0-row batch.
  expect_layer_conforms({
      .make =
          [] {
            return std::make_shared<Reshape>(std::vector<int64_t>{-1, 2, 2});
          },
      .inputs = random_tensor(Shape{2, 3, 4}, 2),
      .output_shapes = {Shape{2, 3, 2, 2}},
  });
}

TEST(ReshapeTest, KeepsRowMajorOrder) {
  Reshape reshape({28, 28, 1});
  const Tensor x = random_tensor(Shape{3, 784}, 3);
  const Tensor y = reshape(x);
  EXPECT_EQ(y.shape(), (Shape{3, 28, 28, 1}));
  EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
}

TEST(ReshapeTest, Config) {
  EXPECT_EQ(Reshape({-1, 4}, {.name = "r"}).get_config(),
            nlohmann::json::parse(R"({"name": "r", "trainable": true, "dtype": "float32", "target_shape": [-1, 4]})"));
}

TEST(ReshapeTest, Errors) {
  EXPECT_THAT(
      [] {
        Reshape bad({-1, -1});
      },
      ThrowsMessage<ValueError>(HasSubstr("Reshape: expected target_shape with positive dimensions and at most one -1. "
                                          "Received: target_shape=(-1, -1)")));
  EXPECT_THAT([] { Reshape bad({0}); }, ThrowsMessage<ValueError>(HasSubstr("Received: target_shape=(0,)")));
  EXPECT_THAT(
      [] {
        Reshape bad({1, 1, 1, 1, 1, 1, 1, 1});
      },
      ThrowsMessage<ValueError>(HasSubstr("Reshape: expected target_shape of at most 7 dimensions")));
  EXPECT_THAT([] { Reshape::from_config(nlohmann::json::parse(R"({"name": "r"})")); },
              ThrowsMessage<ValueError>(HasSubstr("Reshape: config is missing 'target_shape'")));
  Reshape reshape({5, 2}, {.name = "reshape_1"});
  EXPECT_THAT(
      [&] {
        reshape(random_tensor(Shape{64, 12}, 1));
      },
      ThrowsMessage<ShapeError>(
          HasSubstr("reshape_1: cannot reshape inputs of shape (64, 12) (12 elements per example) into (None, 5, 2)")));
  Reshape inferred({-1, 5}, {.name = "reshape_2"});
  EXPECT_THAT(
      [&] {
        inferred(random_tensor(Shape{4, 12}, 1));
      },
      ThrowsMessage<ShapeError>(
          HasSubstr("reshape_2: cannot reshape inputs of shape (4, 12) (12 elements per example) into (None, -1, 5)")));
  EXPECT_THAT([&] { inferred(scalar(1.0)); },
              ThrowsMessage<ValueError>(HasSubstr("Input 0 of layer \"reshape_2\" is incompatible with the layer: "
                                                  "expected min_ndim=1, found ndim=0. Full shape received: ()")));
}

}  // namespace
}  // namespace chorus::layers
