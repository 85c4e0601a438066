#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/chorus.h"
#include "tests/models/model_test_util.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::models {
namespace {

using namespace testing::test_names;

class FunctionalTest : public ::testing::Test {
 protected:
  void SetUp() override { layers::Layer::reset_names(); }
};

TEST_F(FunctionalTest, TutorialMlpHasKerasNamesShapesAndParameterCount) {
  Tensor inputs = layers::Input({784});
  Tensor x = layers::Dense(256, {.activation = "relu"})(inputs);
  x = layers::Dense(256, {.activation = "relu"})(x);
  Tensor outputs = layers::Dense(10)(x);
  Model model(inputs, outputs);

  EXPECT_EQ(model.name(), "functional");
  EXPECT_EQ(model.count_params(), 784 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10);
  std::vector<std::string> paths;
  for (const auto& v : model.weights()) paths.push_back(v.path());
  EXPECT_EQ(paths, (std::vector<std::string>{"dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias",
                                             "dense_2/kernel", "dense_2/bias"}));
  Tensor y = model(testing::random_tensor({5, 784}, 1));
  EXPECT_EQ(y.shape(), (Shape{5, 10}));
}

TEST_F(FunctionalTest, SummaryPrintsKerasTable) {
  Tensor inputs = layers::Input({784});
  Tensor hidden = layers::Dense(256, {.activation = "relu"})(inputs);
  Tensor outputs = layers::Dense(10)(hidden);
  Model model(inputs, outputs);
  std::ostringstream out;
  model.summary(out);
  EXPECT_EQ(out.str(),
            "Model: \"functional\"\n"
            "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓\n"
            "┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃\n"
            "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩\n"
            "│ input_layer (InputLayer)        │ (None, 784)            │             0 │\n"
            "├─────────────────────────────────┼────────────────────────┼───────────────┤\n"
            "│ dense (Dense)                   │ (None, 256)            │       200,960 │\n"
            "├─────────────────────────────────┼────────────────────────┼───────────────┤\n"
            "│ dense_1 (Dense)                 │ (None, 10)             │         2,570 │\n"
            "└─────────────────────────────────┴────────────────────────┴───────────────┘\n"
            " Total params: 203,530 (795.04 KB)\n"
            " Trainable params: 203,530 (795.04 KB)\n"
            " Non-trainable params: 0 (0.00 B)\n");
}

TEST_F(FunctionalTest, SeveralInputsAndOutputsThroughTrees) {
  Tensor a = layers::Input({3}, kFloat32, "a");
  Tensor b = layers::Input({2}, kFloat32, "b");
  Tensor joined = layers::Concatenate()(Tree::list({a, b})).tensor();
  Tensor sum = layers::Add()(Tree::list({layers::Dense(4)(joined), layers::Dense(4)(joined)})).tensor();
  Model model(Tree{{"a", a}, {"b", b}}, Tree{{"sum", sum}, {"joined", joined}});

  Tensor xa = testing::random_tensor({2, 3}, 1), xb = testing::random_tensor({2, 2}, 2);
  Tree out = model(Tree{{"a", xa}, {"b", xb}});
  EXPECT_EQ(out["sum"].tensor().shape(), (Shape{2, 4}));
  EXPECT_TRUE(testing::tensors_near(out["joined"].tensor(), ops::concatenate({xa, xb}, 1), 0, 0));
}

TEST_F(FunctionalTest, SharedLayerReusesItsWeights) {
  layers::Dense shared(3);
  Tensor a = layers::Input({3});
  Tensor y = shared(shared(a));
  Model model(a, y);
  EXPECT_EQ(model.weights().size(), 2u);
  Tensor x = testing::random_tensor({2, 3}, 3);
  EXPECT_TRUE(testing::tensors_near(model(x), shared(shared(x)), 0, 0));
}

TEST_F(FunctionalTest, WrongInputShapeNamesModelAndShapes) {
  auto model = testing::small_mlp(784, 8, 10);
  EXPECT_THAT([&] { (*model)(testing::random_tensor({64, 785}, 1)); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "Input 0 of layer \"functional\" is incompatible with the layer: expected shape=(None, 784) float32, "
                  "found shape=(64, 785) float32")));
}

// Keras's Functional converts each input to its Input's dtype: raw uint8 pixels into a
// float32 model (the R MNIST tutorial's integer arrays), but never strings.
TEST_F(FunctionalTest, InputsAreConvertedToTheirInputsDType) {
  auto model = testing::small_mlp(4, 8, 3);
  const std::vector<uint8_t> pixels = {0, 7, 128, 255, 3, 200, 1, 90};
  const std::vector<float> as_floats(pixels.begin(), pixels.end());
  Tensor got = (*model)(from_values<uint8_t>(pixels, Shape{2, 4}));
  EXPECT_EQ(got.dtype(), kFloat32);
  EXPECT_TRUE(testing::tensors_near(got, (*model)(from_values<float>(as_floats, Shape{2, 4})), 0, 0));
  // The model converts, not its first layer: a Reshape passes its input's dtype on.
  Tensor input = layers::Input({4});
  Model reshape(input, layers::Reshape({2, 2})(input));
  Tensor reshaped = reshape(from_values<uint8_t>(pixels, Shape{2, 4}));
  EXPECT_EQ(reshaped.dtype(), kFloat32);
  EXPECT_TRUE(testing::tensors_near(reshaped, from_values<float>(as_floats, Shape{2, 2, 2}), 0, 0));
  EXPECT_THAT([&] { (*model)(Tensor::from_strings(Shape{1, 4}, {"a", "b", "c", "d"})); },
              ThrowsMessage<ValueError>(HasSubstr("expected shape=(None, 4) float32, found shape=(1, 4) string")));
}

TEST_F(FunctionalTest, OutputsMustComeFromLayersOnTheInputs) {
  Tensor a = layers::Input({3});
  Tensor other = layers::Input({3});
  Tensor y = layers::Dense(2)(other);
  EXPECT_THAT([&] { Model(a, y); }, ThrowsMessage<ValueError>(HasSubstr("depend on input 'input_layer_1'")));
  EXPECT_THAT([&] { Model(a, testing::random_tensor({1, 3}, 1)); },
              ThrowsMessage<ValueError>(HasSubstr("every model output must be produced by layers")));
}

TEST_F(FunctionalTest, SequentialMatchesFunctionalWithSameWeights) {
  Sequential seq({layers::InputLayer({4}), layers::Dense(8, {.activation = "relu"}), layers::Dense(3)});
  EXPECT_EQ(seq.name(), "sequential");
  EXPECT_EQ(seq.layers().size(), 2u);
  EXPECT_EQ(seq.layers()[1]->output_shapes()[0].to_vector(), (std::vector<int64_t>{-1, 3}));  // (None, 3)
  auto functional = testing::small_mlp();
  auto a = seq.weights(), b = functional->weights();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) b[i].assign(a[i].value());
  Tensor x = testing::random_tensor({5, 4}, 9);
  EXPECT_TRUE(testing::tensors_near(seq(x), (*functional)(x), 0, 0));
}

TEST_F(FunctionalTest, SequentialWithoutInputBuildsOnFirstCall) {
  Sequential seq({layers::Dense(8), layers::Dense(3)});
  EXPECT_EQ(seq.weights().size(), 0u);
  EXPECT_EQ(seq(testing::random_tensor({2, 5}, 1)).shape(), (Shape{2, 3}));
  EXPECT_EQ(seq.count_params(), 5 * 8 + 8 + 8 * 3 + 3);
  EXPECT_THAT([&] { seq.add(layers::InputLayer({3})); }, ThrowsMessage<ValueError>(HasSubstr("can only be the first layer")));
}

}  // namespace
}  // namespace chorus::models
