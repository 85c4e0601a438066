#include "chorus/layers/preprocessing/normalization.h"

#include "chorus/core/creation.h"
#include "chorus/data/dataset.h"
#include "chorus/layers/input_layer.h"
#include "chorus/layers/registry.h"
#include "tests/layers/layer_conformance.h"
#include "tests/layers/preprocessing/preprocessing_test_util.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;
using namespace testing::preprocessing_test_names;

// Keras's docstring data: [[0, 7, 4], [2, 9, 6], [0, 7, 4], [2, 9, 6]] (mean [1, 8, 5], variance 1).
Tensor features() { return from_values({0.f, 7.f, 4.f, 2.f, 9.f, 6.f, 0.f, 7.f, 4.f, 2.f, 9.f, 6.f}, Shape{4, 3}); }

TEST(NormalizationTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<Normalization>(); },
      .inputs = features(),
      .output_shapes = {Shape{4, 3}},
      .weights = {{"mean", Shape{3}, false}, {"variance", Shape{3}, false}, {"count", Shape{}, false}},
      .count_params = 7,
  });
  expect_layer_conforms({
      .make = [] { return std::make_shared<Normalization>(NormalizationOptions{.axis = {1, 2}}); },
      .inputs = testing::random_tensor(Shape{2, 3, 4}, 3),
      .output_shapes = {Shape{2, 3, 4}},
      .weights = {{"mean", Shape{3, 4}, false}, {"variance", Shape{3, 4}, false}, {"count", Shape{}, false}},
      .count_params = 25,
  });
  expect_layer_conforms({
      .make =
          [] {
            return std::make_shared<Normalization>(
                NormalizationOptions{.mean = from_values({1.f, 2.f}), .variance = from_values({4.f, 9.f})});
          },
      .inputs = from_values({1.f, 2.f, 3.f, 4.f}, Shape{2, 2}),
      .output_shapes = {Shape{2, 2}},
  });
}

// The examples of keras.layers.Normalization's docstring, with the outputs it documents.
TEST(NormalizationTest, GlobalMeanAndVarianceFromAdapt) {
  Normalization layer({.axis = {}});
  layer.adapt(from_values({1.f, 2.f, 3.f, 4.f, 5.f}));
  expect_floats(layer(from_values({1.f, 2.f, 3.f})), Shape{3}, {-1.4142135f, -0.70710677f, 0.f});
  EXPECT_EQ(layer.mean().item<float>(), 3.f);
  EXPECT_EQ(layer.variance().item<float>(), 2.f);
}

TEST(NormalizationTest, PerFeatureMeanAndVarianceFromAdapt) {
  Normalization layer({.axis = {-1}});
  layer.adapt(features());
  expect_floats(layer(from_values({0.f, 7.f, 4.f}, Shape{1, 3})), Shape{1, 3}, {-1, -1, -1});
  EXPECT_EQ(layer.mean().to_vector<float>(), (std::vector<float>{1, 8, 5}));
  EXPECT_EQ(layer.variance().to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

TEST(NormalizationTest, GivenMeanAndVariance) {
  Normalization layer({.mean = scalar(3.0), .variance = scalar(2.0)});
  expect_floats(layer(from_values({1.f, 2.f, 3.f}, Shape{3, 1})), Shape{3, 1}, {-1.4142135f, -0.70710677f, 0.f});
  EXPECT_TRUE(layer.weights().empty());
}

TEST(NormalizationTest, Invert) {
  Normalization layer({.axis = {-1}, .invert = true});
  layer.adapt(features());
  expect_floats(layer(from_values({1.f, 2.f, 3.f}, Shape{1, 3})), Shape{1, 3}, {2, 10, 8});
}

TEST(NormalizationTest, AdaptOverADatasetCombinesBatchesExactly) {
  const Tensor data = testing::random_tensor(Shape{37, 4}, 5, -3, 7);
  Normalization whole;
  whole.adapt(data);
  Normalization batched;
  batched.adapt(data::Dataset::from_tensor_slices(data).batch(5));  // 7 batches of 5 and one of 2
  EXPECT_TRUE(testing::tensors_near(batched.mean(), whole.mean(), 1e-6, 1e-6));
  EXPECT_TRUE(testing::tensors_near(batched.variance(), whole.variance(), 1e-6, 1e-6));
  // (x, y) elements: x is used. `steps` stops early.
  Normalization pairs;
  pairs.adapt(data::Dataset::from_tensor_slices(Tree::list({data, data})).batch(5));
  EXPECT_TRUE(testing::tensors_near(pairs.mean(), whole.mean(), 1e-6, 1e-6));
  Normalization first;
  first.adapt(data::Dataset::from_tensor_slices(data).batch(5), 1);
  Normalization five;
  five.adapt(data.first_axis_slice(0, 5));
  EXPECT_TRUE(testing::tensors_near(first.mean(), five.mean(), 1e-6, 1e-6));
  // Integer data is normalised as float32.
  Normalization from_ints({.axis = {}});
  from_ints.adapt(testing::ints(Shape{4}, {1, 2, 3, 4}));
  expect_floats(from_ints(testing::ints(Shape{1}, {4})), Shape{1}, {1.3416408f});
}

TEST(NormalizationTest, WorksInDatasetMapOnWorkerThreads) {
  auto layer = std::make_shared<Normalization>();
  layer->adapt(features());
  const Tensor rows = testing::random_tensor(Shape{64, 3}, 9);
  auto ds = data::Dataset::from_tensor_slices(rows)
                .map([layer](const Tree& x) { return Tree((*layer)(x.tensor())); }, {.num_parallel_calls = 3})
                .batch(64);
  EXPECT_TRUE(testing::tensors_near(ds.iterator().next()->tensor(), (*layer)(rows), 1e-6, 1e-6));
}

TEST(NormalizationTest, ConfigKeepsGivenStatistics) {
  Normalization layer({.axis = {-1}, .mean = from_values({1.f, 2.f}), .variance = from_values({4.f, 9.f}),
                       .name = "norm"});
  const nlohmann::json config = serialize_layer(layer);
  EXPECT_EQ(config["config"]["mean"], nlohmann::json::parse("[1.0, 2.0]"));
  EXPECT_EQ(config["config"]["variance"], nlohmann::json::parse("[4.0, 9.0]"));
  EXPECT_EQ(config["config"]["axis"], nlohmann::json::parse("[-1]"));
  const auto clone = layer_from_config(config);
  expect_floats((*clone)(from_values({3.f, 8.f}, Shape{1, 2})), Shape{1, 2}, {1, 2});
  const auto keras = layer_from_config(nlohmann::json::parse(
      R"({"class_name": "Normalization", "config": {"axis": null, "mean": 3.0, "variance": 2.0, "invert": false}})"));
  expect_floats((*keras)(from_values({1.f, 3.f})), Shape{2}, {-1.4142135f, 0});
}

TEST(NormalizationTest, Errors) {
  EXPECT_THAT([] { Normalization({.mean = scalar(1.0)}); },
              ThrowsMessage<ValueError>(HasSubstr("Normalization: mean and variance must be given together")));
  EXPECT_THAT([] { Normalization({.mean = from_values({1.f, 2.f}), .variance = scalar(1.0)}); },
              ThrowsMessage<ValueError>(HasSubstr("Normalization: mean and variance must have the same shape. "
                                                  "Received: mean shape (2,) and variance shape ()")));
  EXPECT_THAT([] { Normalization({.axis = {}, .mean = from_values({1.f}), .variance = from_values({1.f})}); },
              ThrowsMessage<ValueError>(HasSubstr("the rank of mean must be at most the number of axes (0)")));
  Normalization layer({.name = "norm"});
  EXPECT_THAT([&] { layer(Tensor::from_strings({"1.5"})); },
              ThrowsMessage<DTypeError>(HasSubstr("norm: expected numeric inputs, got dtype string")));
  EXPECT_FALSE(layer.built());
  layer.adapt(features());
  EXPECT_THAT([&] { layer(from_values({1.f, 2.f}, Shape{1, 2})); },
              ThrowsMessage<ShapeError>(HasSubstr("norm: expected inputs of rank 2 with dims (3,) on axes [1], got "
                                                  "shape (1, 2)")));
  EXPECT_THAT([&] { layer.adapt(from_values({1.f, 2.f}, Shape{1, 2})); },
              ThrowsMessage<ValueError>(HasSubstr("norm: adapt got data of shape (1, 2), but the layer was built for "
                                                  "rank 2 with dims (3,) on axes [1]")));
  Normalization empty({.name = "empty"});
  EXPECT_THAT([&] { empty.adapt(data::Dataset::from_tensor_slices(features()).take(0)); },
              ThrowsMessage<ValueError>(HasSubstr("empty: adapt was given an empty dataset (no elements)")));
  EXPECT_THAT([&] { empty.adapt(Tensor::empty(Shape{0, 3})); },
              ThrowsMessage<ValueError>(HasSubstr("empty: adapt was given an empty tensor of shape (0, 3)")));
  EXPECT_THAT([&] { empty.adapt(Tensor::from_strings({"x"})); },
              ThrowsMessage<DTypeError>(HasSubstr("empty: expected numeric data, got dtype string")));
  Normalization given({.mean = scalar(0.0), .variance = scalar(1.0), .name = "given"});
  EXPECT_THAT([&] { given.adapt(features()); },
              ThrowsMessage<ValueError>(HasSubstr("given: cannot adapt a layer that was given its mean and variance")));
  Normalization batch_axis({.axis = {0}, .name = "batch_axis"});
  EXPECT_THAT([&] { batch_axis(Input({3})); },
              ThrowsMessage<ValueError>(HasSubstr("batch_axis: a kept axis must have a known size, but axis 0 of a "
                                                  "symbolic input (shape (None, 3)) is the batch axis")));
  Normalization bad_axis({.axis = {2}, .name = "bad_axis"});
  EXPECT_THAT([&] { bad_axis(features()); },
              ThrowsMessage<ValueError>(HasSubstr("bad_axis: every axis must be in [-ndim, ndim); inputs of shape "
                                                  "(4, 3) have ndim=2, axis=[2]")));
}

}  // namespace
}  // namespace chorus::layers
