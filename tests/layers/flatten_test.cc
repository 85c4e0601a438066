#include "chorus/layers/flatten.h"

#include "tests/layers/layer_conformance.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

TEST(FlattenTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<Flatten>(); },
      .inputs = random_tensor(Shape{3, 4, 5, 2}, 1),
      .output_shapes = {Shape{3, 40}},
  });
  expect_layer_conforms({
      .make = [] { return std::make_shared<Flatten>(); },
      .inputs = random_tensor(Shape{7}, 2),
      .output_shapes = {Shape{7, 1}},
  });
}

TEST(FlattenTest, KeepsRowMajorOrder) {
  Flatten flatten;
  const Tensor x = random_tensor(Shape{6, 2, 3}, 3).first_axis_slice(1, 4);
  const Tensor y = flatten(x);
  EXPECT_EQ(y.shape(), (Shape{3, 6}));
  EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
}

TEST(FlattenTest, Config) {
  EXPECT_EQ(Flatten({.name = "f"}).get_config(),
            nlohmann::json::parse(R"({"name": "f", "trainable": true, "dtype": "float32", "data_format": "channels_last"})"));
}

TEST(FlattenTest, Errors) {
  Flatten flatten({.name = "flat"});
  EXPECT_THAT([&] { flatten(scalar(1.0)); },
              ThrowsMessage<ValueError>(HasSubstr("Input 0 of layer \"flat\" is incompatible with the layer: "
                                                  "expected min_ndim=1, found ndim=0. Full shape received: ()")));
  EXPECT_THAT([] { Flatten::from_config(nlohmann::json::parse(R"({"data_format": "channels_first"})")); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "Flatten: only data_format='channels_last' is supported. Received: data_format=channels_first")));
}

}  // namespace
}  // namespace chorus::layers
