#include "chorus/layers/registry.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "chorus/layers/layers.h"
#include "chorus/ops/ops.h"
#include "tests/testing/registry_coverage.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::layers {
namespace {

using namespace testing::test_names;

TEST(LayerRegistryTest, BuildsEveryBuiltInFromItsConfig) {
  const std::vector<std::shared_ptr<Layer>> originals = {
      std::make_shared<Dense>(3, DenseOptions{.activation = "relu"}),
      std::make_shared<Embedding>(10, 4),
      std::make_shared<Dropout>(0.3, DropoutOptions{.seed = 1}),
      std::make_shared<Activation>("tanh"),
      std::make_shared<Flatten>(),
      std::make_shared<Reshape>(std::vector<int64_t>{2, -1}),
      std::make_shared<LayerNormalization>(),
      std::make_shared<BatchNormalization>(),
      std::make_shared<Concatenate>(),
      std::make_shared<Add>(),
      std::make_shared<InputLayer>(Shape{784}),
      std::make_shared<EinsumDense>("abc,cde->abde", std::vector<int64_t>{-1, 2, 4}, EinsumDenseOptions{.bias_axes = "de"}),
      std::make_shared<MultiHeadAttention>(2, 4, MultiHeadAttentionOptions{.dropout = 0.1, .seed = 5}),
      std::make_shared<TransformerEncoder>(16, 2, TransformerEncoderOptions{.activation = "gelu"}),
      std::make_shared<PositionEmbedding>(8),
      std::make_shared<ReversibleEmbedding>(10, 4, ReversibleEmbeddingOptions{.logit_soft_cap = 30.0}),
      std::make_shared<TokenAndPositionEmbedding>(10, 8, 4),
      std::make_shared<Hashing>(7, HashingOptions{.mask_value = "-"}),
      std::make_shared<IntegerLookup>(IntegerLookupOptions{.vocabulary = {3, 5, 9}}),
      std::make_shared<StringLookup>(StringLookupOptions{.vocabulary = {"a", "b"}}),
      std::make_shared<Normalization>(),
      std::make_shared<TextVectorization>(TextVectorizationOptions{.vocabulary = {"the", "cat"}}),
  };
  // Every round trip goes through the strict config reader: a key that get_config writes
  // but from_config does not read would fail here as an unexpected key.
  std::set<std::string> covered;
  for (const auto& layer : originals) {
    const auto clone = layer_from_config(serialize_layer(*layer));
    EXPECT_EQ(clone->class_name(), layer->class_name());
    EXPECT_EQ(clone->name(), layer->name());
    EXPECT_EQ(clone->get_config(), layer->get_config()) << layer->class_name();
    covered.insert(layer->class_name());
  }
  // Scale and TiedEmbeddingLogits are registered by tests, as a user would.
  testing::expect_registry_covered(registered_layers(), covered, {"Scale", "TiedEmbeddingLogits"});
}

TEST(LayerRegistryTest, ReadsKerasSerialisedLayers) {
  // As keras.saving.serialize_keras_object writes a Dense (its keys for features chorus
  // lacks are accepted while unset).
  const auto layer = layer_from_config(nlohmann::json::parse(R"({
      "module": "keras.layers", "class_name": "Dense", "registered_name": null,
      "config": {"name": "dense_7", "trainable": false, "dtype": "float32", "units": 10, "activation": "softmax",
                 "use_bias": true, "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform",
                 "config": {"seed": null}, "registered_name": null},
                 "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {},
                 "registered_name": null}, "kernel_regularizer": null, "bias_regularizer": null,
                 "kernel_constraint": null, "bias_constraint": null}})"));
  const auto* dense = dynamic_cast<const Dense*>(layer.get());
  ASSERT_NE(dense, nullptr);
  EXPECT_EQ(dense->name(), "dense_7");
  EXPECT_EQ(dense->units(), 10);
  EXPECT_EQ(dense->activation().name(), "softmax");
  EXPECT_FALSE(dense->trainable());
}

class Scale : public Layer {
 public:
  explicit Scale(double factor, std::string name = "") : Layer("Scale", std::move(name)), factor_(factor) {}
  nlohmann::json get_config() const override {
    auto config = Layer::get_config();
    config["factor"] = factor_;
    return config;
  }
  double factor() const { return factor_; }

 protected:
  Tree call(const Tree& inputs, bool) override { return inputs.tensor() * factor_; }

 private:
  double factor_;
};

TEST(LayerRegistryTest, UsersRegisterTheirOwnClasses) {
  register_layer("Scale", [](const nlohmann::json& config) {
    return std::make_shared<Scale>(config.at("factor").get<double>(), config.value("name", ""));
  });
  const auto names = registered_layers();
  EXPECT_NE(std::find(names.begin(), names.end(), "Scale"), names.end());
  const auto layer = layer_from_config(serialize_layer(Scale(2.5, "s")));
  EXPECT_EQ(dynamic_cast<const Scale&>(*layer).factor(), 2.5);
  EXPECT_EQ(layer->name(), "s");
}

TEST(LayerRegistryTest, Errors) {
  // Every built-in class is registered; the message lists all registered classes, sorted
  // (tests that ran before may have added their own, as a user would).
  const std::vector<std::string> names = registered_layers();
  for (const char* builtin :
       {"Activation", "Add", "BatchNormalization", "Concatenate", "Dense", "Dropout", "EinsumDense", "Embedding",
        "Flatten", "Hashing", "InputLayer", "IntegerLookup", "LayerNormalization", "MultiHeadAttention",
        "Normalization", "PositionEmbedding", "Reshape", "ReversibleEmbedding", "StringLookup", "TextVectorization",
        "TokenAndPositionEmbedding", "TransformerEncoder"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), builtin), names.end()) << builtin;
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_THAT([] { layer_from_config(nlohmann::json::parse(R"({"class_name": "Conv2D", "config": {}})")); },
              ThrowsMessage<ValueError>(HasSubstr("layer_from_config: unknown layer class 'Conv2D'. Known classes: " +
                                                  fmt::format("{}", fmt::join(names, ", ")))));
  EXPECT_THAT(
      [] { layer_from_config(nlohmann::json::parse(R"({"config": {}})")); },
      ThrowsMessage<ValueError>(HasSubstr("layer_from_config: expected {\"class_name\": ..., \"config\": {...}}")));
  EXPECT_THAT(
      [] {
        layer_from_config(nlohmann::json::parse(
            R"({"class_name": "InputLayer", "config": {"batch_shape": [null, 2], "dtype": 5, "name": "x"}})"));
      },
      ThrowsMessage<ValueError>(HasSubstr("InputLayer: config key 'dtype': expected a string, got 5 (an integer)")));
  EXPECT_THAT(
      [] {
        layer_from_config(
            nlohmann::json::parse(R"({"class_name": "Dropout", "config": {"rate": 0.5, "noise_shape": ["x"]}})"));
      },
      ThrowsMessage<ValueError>(
          HasSubstr("Dropout: config key 'noise_shape': expected a list of integers or nulls, got [\"x\"] (a list)")));
  EXPECT_THAT([] { register_layer("", [](const nlohmann::json&) { return std::shared_ptr<Layer>(); }); },
              ThrowsMessage<ValueError>(HasSubstr("register_layer: expected a class name, got an empty string")));
  EXPECT_THAT(
      [] { register_layer("Nothing", nullptr); },
      ThrowsMessage<ValueError>(HasSubstr("register_layer: expected a factory for 'Nothing', got an empty function")));
}

}  // namespace
}  // namespace chorus::layers
