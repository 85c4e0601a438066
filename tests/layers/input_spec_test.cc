#include "chorus/layers/input_spec.h"

#include "chorus/core/creation.h"
#include "chorus/layers/input_layer.h"
#include "tests/layers/layer_conformance.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

void check_specs(const std::vector<InputSpec>& specs, const Tree& inputs) {
  assert_input_compatibility(specs, inputs, "probe");
}

TEST(InputSpecTest, EmptySpecsAndDefaultSpecAcceptAnything) {
  EXPECT_NO_THROW(check_specs({}, zeros(Shape{})));
  EXPECT_NO_THROW(check_specs({InputSpec{}}, zeros(Shape{2, 3, 4}, kInt32)));
  EXPECT_NO_THROW(check_specs({InputSpec{}, InputSpec{.ndim = 1}}, Tree::list({zeros(Shape{}), zeros(Shape{2})})));
}

TEST(InputSpecTest, Ndim) {
  EXPECT_NO_THROW(check_specs({{.ndim = 2}}, zeros(Shape{5, 4})));
  EXPECT_THAT([] { check_specs({{.ndim = 3}}, zeros(Shape{5, 4})); },
              ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"probe\" is incompatible with the layer: expected "
                                              "ndim=3, found ndim=2. Full shape received: (5, 4)")));
}

TEST(InputSpecTest, MinAndMaxNdim) {
  EXPECT_NO_THROW(check_specs({{.max_ndim = 3, .min_ndim = 2}}, zeros(Shape{5, 4})));
  EXPECT_NO_THROW(check_specs({{.max_ndim = 3, .min_ndim = 2}}, zeros(Shape{5, 4, 3})));
  EXPECT_THAT([] { check_specs({{.min_ndim = 2}}, zeros(Shape{4})); },
              ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"probe\" is incompatible with the layer: expected "
                                              "min_ndim=2, found ndim=1. Full shape received: (4,)")));
  EXPECT_THAT([] { check_specs({{.max_ndim = 3}}, zeros(Shape{1, 2, 3, 4})); },
              ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"probe\" is incompatible with the layer: expected "
                                              "max_ndim=3, found ndim=4")));
}

TEST(InputSpecTest, Dtype) {
  EXPECT_NO_THROW(check_specs({{.dtype = kInt32}}, zeros(Shape{2}, kInt32)));
  EXPECT_THAT([] { check_specs({{.dtype = kFloat32}}, zeros(Shape{2}, kInt32)); },
              ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"probe\" is incompatible with the layer: expected "
                                              "dtype=float32, found dtype=int32")));
}

TEST(InputSpecTest, AxesCountNegativeAxesFromTheEnd) {
  EXPECT_NO_THROW(check_specs({{.axes = {{-1, 4}, {0, 5}}}}, zeros(Shape{5, 3, 4})));
  EXPECT_NO_THROW(check_specs({{.axes = {{1, 3}}}}, zeros(Shape{5, 3, 4})));
  EXPECT_THAT([] { check_specs({{.min_ndim = 2, .axes = {{-1, 4}}}}, zeros(Shape{5, 3})); },
              ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"probe\" is incompatible with the layer: expected "
                                              "axis -1 of input shape to have value 4, but received input with "
                                              "shape (5, 3)")));
  EXPECT_THAT([] { check_specs({{.axes = {{1, 4}}}}, zeros(Shape{5, 3, 4})); },
              ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"probe\" is incompatible with the layer: expected "
                                              "axis 1 of input shape to have value 4, but received input with "
                                              "shape (5, 3, 4)")));
  EXPECT_THAT([] { check_specs({{.axes = {{-3, 4}}}}, zeros(Shape{5, 4})); },
              ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"probe\" is incompatible with the layer: axis -3 is "
                                              "out of bounds for an input with ndim=2. Full shape received: (5, 4)")));
}

TEST(InputSpecTest, ShapeWithAnyDims) {
  const InputSpec spec{.shape = std::vector<int64_t>{-1, 4}};
  EXPECT_NO_THROW(check_specs({spec}, zeros(Shape{7, 4})));
  EXPECT_THAT([&] { check_specs({spec}, zeros(Shape{7, 3})); },
              ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"probe\" is incompatible with the layer: expected "
                                              "shape=(None, 4), found shape=(7, 3)")));
  // The shape implies its rank.
  EXPECT_THAT([&] { check_specs({spec}, zeros(Shape{7, 4, 1})); },
              ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"probe\" is incompatible with the layer: expected "
                                              "ndim=2, found ndim=3. Full shape received: (7, 4, 1)")));
}

TEST(InputSpecTest, AllowLastAxisSqueeze) {
  const InputSpec spec{.shape = std::vector<int64_t>{-1, 28, 28, 1}, .allow_last_axis_squeeze = true};
  EXPECT_NO_THROW(check_specs({spec}, zeros(Shape{2, 28, 28, 1})));
  EXPECT_NO_THROW(check_specs({spec}, zeros(Shape{2, 28, 28})));
  const InputSpec squeezed{.shape = std::vector<int64_t>{-1, 3}, .allow_last_axis_squeeze = true};
  EXPECT_NO_THROW(check_specs({squeezed}, zeros(Shape{2, 3, 1})));
  EXPECT_THAT([&] { check_specs({spec}, zeros(Shape{2, 28, 27})); },
              ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"probe\" is incompatible with the layer: expected "
                                              "shape=(None, 28, 28, 1), found shape=(2, 28, 27)")));
}

TEST(InputSpecTest, MultipleInputsNameTheFailingIndex) {
  const std::vector<InputSpec> specs{{.ndim = 2}, {.min_ndim = 2, .axes = {{-1, 4}}}};
  EXPECT_NO_THROW(check_specs(specs, Tree::list({zeros(Shape{2, 3}), zeros(Shape{2, 4})})));
  EXPECT_THAT([&] { check_specs(specs, Tree::list({zeros(Shape{2, 3}), zeros(Shape{2, 3})})); },
              ThrowsMessage<ValueError>(StrEq("Input 1 of layer \"probe\" is incompatible with the layer: expected "
                                              "axis -1 of input shape to have value 4, but received input with "
                                              "shape (2, 3)")));
  // A dict's inputs are matched in key order.
  EXPECT_NO_THROW(check_specs(specs, Tree({{"a", zeros(Shape{2, 3})}, {"b", zeros(Shape{2, 4})}})));
  EXPECT_THAT(
      [&] { check_specs(specs, Tree::list({zeros(Shape{2, 3})})); },
      ThrowsMessage<ValueError>(::testing::StartsWith(
          "Layer \"probe\" expects 2 input(s), but it received 1 input tensors. Inputs received: ")));
  EXPECT_THAT([&] { check_specs(specs, zeros(Shape{2, 3})); },
              ThrowsMessage<ValueError>(::testing::HasSubstr("expects 2 input(s), but it received 1 input tensors")));
}

TEST(InputSpecTest, ValidateRejectsAnAxisBeyondTheRank) {
  EXPECT_NO_THROW(validate_input_spec({.ndim = 2, .axes = {{1, 4}, {-5, 3}}}));
  EXPECT_NO_THROW(validate_input_spec({.min_ndim = 2, .axes = {{7, 4}}}));
  EXPECT_THAT([] { validate_input_spec({.ndim = 2, .axes = {{2, 4}}}); },
              ThrowsMessage<ValueError>(StrEq("Axis 2 is greater than the maximum allowed value: 1")));
  EXPECT_THAT([] { validate_input_spec({.max_ndim = 3, .axes = {{3, 4}}}); },
              ThrowsMessage<ValueError>(StrEq("Axis 3 is greater than the maximum allowed value: 2")));
}

// Declares min_ndim=2 in its constructor and the last axis in build(), as Dense does.
class SpecProbeLayer : public Layer {
 public:
  SpecProbeLayer() : Layer("SpecProbe", "probe") { set_input_spec(InputSpec{.min_ndim = 2}); }
  int builds = 0;
  int calls = 0;

 protected:
  void build(const Tree& inputs) override {
    ++builds;
    set_input_spec(InputSpec{.min_ndim = 2, .axes = {{-1, inputs.tensor().dim(-1)}}});
  }
  Tree call(const Tree& inputs, bool /*training*/) override {
    ++calls;
    return inputs.tensor().view(inputs.tensor().shape());
  }
};

TEST(InputSpecTest, LayerChecksItsSpecBeforeAndAfterBuild) {
  SpecProbeLayer layer;
  ASSERT_EQ(layer.input_spec().size(), 1u);
  EXPECT_EQ(layer.input_spec()[0].min_ndim, 2);
  // The constructor's spec stops a rank-1 input before build() sees it.
  EXPECT_THAT([&] { layer(zeros(Shape{4})); },
              ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"probe\" is incompatible with the layer: expected "
                                              "min_ndim=2, found ndim=1. Full shape received: (4,)")));
  EXPECT_EQ(layer.builds, 0);
  EXPECT_FALSE(layer.built());
  layer(zeros(Shape{2, 4}));
  EXPECT_EQ(layer.builds, 1);
  EXPECT_EQ(layer.input_spec()[0].axes.at(-1), 4);
  EXPECT_THAT([&] { layer(zeros(Shape{2, 5})); },
              ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"probe\" is incompatible with the layer: expected "
                                              "axis -1 of input shape to have value 4, but received input with "
                                              "shape (2, 5)")));
  EXPECT_EQ(layer.calls, 1);  // call() never saw the bad inputs
}

TEST(InputSpecTest, SymbolicInputsPrintTheirBatchAxisAsNone) {
  SpecProbeLayer layer;
  const Tensor x = Input(Shape{3});
  EXPECT_NO_THROW(layer(x));
  const Tensor y = Input(Shape{5});
  EXPECT_THAT([&] { layer(y); },
              ThrowsMessage<ValueError>(StrEq("Input 0 of layer \"probe\" is incompatible with the layer: expected "
                                              "axis -1 of input shape to have value 3, but received input with "
                                              "shape (None, 5)")));
  // A symbolic batch axis (0 rows) has any size.
  EXPECT_NO_THROW(check_specs({{.shape = std::vector<int64_t>{8, 3}, .axes = {{0, 8}}}}, x));
}

}  // namespace
}  // namespace chorus::layers
