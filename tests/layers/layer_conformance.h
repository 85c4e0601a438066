// The conformance check every layer test runs (Keras's run_layer_test): output shapes,
// weights (names, paths, shapes, trainability), count_params, the get_config ->
// layer_from_config round trip (same config, same outputs once the weights are copied),
// and calls on a 0-row batch and on symbolic inputs. Header-only; test threads only.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chorus/layers/input_layer.h"
#include "chorus/layers/layer.h"
#include "chorus/layers/registry.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::testing {

struct WeightSpec {
  // "kernel", or "query/kernel" for a sublayer's; the path is "<layer path>/<name>".
  std::string name;
  Shape shape;
  bool trainable = true;
};

struct LayerCase {
  // Makes a fresh, unbuilt layer.
  std::function<std::shared_ptr<layers::Layer>()> make;
  // Example inputs with a non-empty batch: a tensor, or a list for merge layers.
  Tree inputs;
  // The expected shape of each output leaf for `inputs`.
  std::vector<Shape> output_shapes;
  // The expected weights, in order.
  std::vector<WeightSpec> weights;
  int64_t count_params = 0;
};

// `tree` with every leaf's first axis cut to 0 rows (same dtypes and other dims).
inline Tree empty_batch(const Tree& tree) {
  return tree.map([](const Tensor& t) {
    Shape shape = t.shape();
    if (shape.rank() > 0) shape[0] = 0;
    return Tensor::empty(shape, t.dtype());
  });
}

// Symbolic inputs (layers::Input) with the structure, dtypes and non-batch dims of `tree`.
inline Tree symbolic_like(const Tree& tree) {
  return tree.map([](const Tensor& t) {
    std::vector<int64_t> dims(t.shape().begin() + 1, t.shape().end());
    return layers::Input(Shape(dims), t.dtype());
  });
}

inline std::vector<Shape> leaf_shapes(const Tree& tree) {
  std::vector<Shape> shapes;
  for (const Tensor& t : tree.flatten()) shapes.push_back(t.shape());
  return shapes;
}

inline std::vector<Shape> with_batch(std::vector<Shape> shapes, int64_t batch) {
  for (Shape& s : shapes) {
    if (s.rank() > 0) s[0] = batch;
  }
  return shapes;
}

inline void expect_weights(const layers::Layer& layer, const LayerCase& c) {
  const auto weights = layer.weights();
  ASSERT_EQ(weights.size(), c.weights.size()) << layer.name();
  size_t trainable = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const std::string& spec = c.weights[i].name;
    EXPECT_EQ(weights[i].name(), spec.substr(spec.rfind('/') + 1));  // npos + 1 == 0
    EXPECT_EQ(weights[i].path(), layer.path() + "/" + spec);
    EXPECT_EQ(weights[i].shape(), c.weights[i].shape) << c.weights[i].name;
    EXPECT_EQ(weights[i].trainable(), c.weights[i].trainable) << c.weights[i].name;
    trainable += c.weights[i].trainable ? 1 : 0;
  }
  EXPECT_EQ(layer.trainable_weights().size(), trainable);
  EXPECT_EQ(layer.non_trainable_weights().size(), weights.size() - trainable);
  EXPECT_EQ(layer.count_params(), c.count_params);
}

// Runs every check; call it once per layer configuration.
inline void expect_layer_conforms(const LayerCase& c) {
  // Shapes and weights on a real batch.
  std::shared_ptr<layers::Layer> layer = c.make();
  EXPECT_FALSE(layer->built());
  const Tree outputs = (*layer)(c.inputs);
  EXPECT_TRUE(layer->built());
  EXPECT_EQ(leaf_shapes(outputs), c.output_shapes);
  EXPECT_EQ(layer->output_shapes(), with_batch(c.output_shapes, -1));
  expect_weights(*layer, c);

  // The built layer accepts a 0-row batch.
  EXPECT_EQ(leaf_shapes((*layer)(empty_batch(c.inputs))), with_batch(c.output_shapes, 0));

  // get_config survives JSON text and rebuilds an equal layer; with the same weights it
  // computes the same outputs.
  const nlohmann::json config = layers::serialize_layer(*layer);
  const std::shared_ptr<layers::Layer> clone = layers::layer_from_config(nlohmann::json::parse(config.dump()));
  EXPECT_EQ(clone->class_name(), layer->class_name());
  EXPECT_EQ(layers::serialize_layer(*clone), config);
  clone->build_from(c.inputs);
  const auto weights = layer->weights(), clone_weights = clone->weights();
  ASSERT_EQ(clone_weights.size(), weights.size());
  for (size_t i = 0; i < weights.size(); ++i) clone_weights[i].assign(weights[i].value());
  const Tree clone_outputs = (*clone)(c.inputs);
  const auto a = outputs.flatten(), b = clone_outputs.flatten();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(tensors_near(b[i], a[i], 0, 0)) << "output " << i;

  // A fresh layer builds from a 0-row batch (weights do not depend on the batch size).
  std::shared_ptr<layers::Layer> from_empty = c.make();
  EXPECT_EQ(leaf_shapes((*from_empty)(empty_batch(c.inputs))), with_batch(c.output_shapes, 0));
  expect_weights(*from_empty, c);

  // Symbolic inputs (the functional API) give symbolic outputs of the same shapes.
  std::shared_ptr<layers::Layer> symbolic = c.make();
  const Tree symbolic_outputs = (*symbolic)(symbolic_like(c.inputs));
  EXPECT_TRUE(layers::is_symbolic(symbolic_outputs));
  EXPECT_EQ(leaf_shapes(symbolic_outputs), with_batch(c.output_shapes, 0));
  expect_weights(*symbolic, c);
}

// `layer`, built on (batch, units) inputs, refuses a (batch, units + 1) and a
// (2, batch, units) input with the ValueErrors of its InputSpec (ndim=2, axis -1 = units):
// "Input 0 of layer \"<name>\" is incompatible with the layer: expected ...".
inline void expect_2d_input_spec(layers::Layer& layer, int64_t batch, int64_t units) {
  const std::string prefix = "Input 0 of layer \"" + layer.name() + "\" is incompatible with the layer: ";
  const Shape wider{batch, units + 1}, deeper{2, batch, units};
  EXPECT_THAT([&] { layer(random_tensor(wider, 1)); },
              ::testing::ThrowsMessage<ValueError>(::testing::HasSubstr(
                  prefix + "expected axis -1 of input shape to have value " + std::to_string(units) +
                  ", but received input with shape " + wider.to_string())));
  EXPECT_THAT([&] { layer(random_tensor(deeper, 1)); },
              ::testing::ThrowsMessage<ValueError>(::testing::HasSubstr(
                  prefix + "expected ndim=2, found ndim=3. Full shape received: " + deeper.to_string())));
}

// The names every layer test uses (test_names.h's and expect_layer_conforms): a test says
// `using namespace testing::layer_test_names;` in its anonymous namespace once.
namespace layer_test_names {
using namespace test_names;
using chorus::testing::expect_layer_conforms;
}  // namespace layer_test_names

}  // namespace chorus::testing
