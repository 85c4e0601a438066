#include "chorus/layers/registry.h"

#include "chorus/core/registry.h"
#include "chorus/layers/activation.h"
#include "chorus/layers/add.h"
#include "chorus/layers/batch_normalization.h"
#include "chorus/layers/concatenate.h"
#include "chorus/layers/dense.h"
#include "chorus/layers/dropout.h"
#include "chorus/layers/einsum_dense.h"
#include "chorus/layers/embedding.h"
#include "chorus/layers/flatten.h"
#include "chorus/layers/input_layer.h"
#include "chorus/layers/layer_normalization.h"
#include "chorus/layers/multi_head_attention.h"
#include "chorus/layers/position_embedding.h"
#include "chorus/layers/preprocessing/hashing.h"
#include "chorus/layers/preprocessing/integer_lookup.h"
#include "chorus/layers/preprocessing/normalization.h"
#include "chorus/layers/preprocessing/string_lookup.h"
#include "chorus/layers/preprocessing/text_vectorization.h"
#include "chorus/layers/reshape.h"
#include "chorus/layers/reversible_embedding.h"
#include "chorus/layers/token_and_position_embedding.h"
#include "chorus/layers/transformer_encoder.h"

namespace chorus::layers {
namespace {

// The built-ins are listed here rather than registered by static initialisers in each
// layer's file, which a static library's linker could drop.
Registry<Layer>& registry() {
  static Registry<Layer> instance("layer", {
      {"Activation", Activation::from_config},
      {"Add", Add::from_config},
      {"BatchNormalization", BatchNormalization::from_config},
      {"Concatenate", Concatenate::from_config},
      {"Dense", Dense::from_config},
      {"Dropout", Dropout::from_config},
      {"EinsumDense", EinsumDense::from_config},
      {"Embedding", Embedding::from_config},
      {"Flatten", Flatten::from_config},
      {"Hashing", Hashing::from_config},
      {"InputLayer", InputLayer::from_config},
      {"IntegerLookup", IntegerLookup::from_config},
      {"LayerNormalization", LayerNormalization::from_config},
      {"MultiHeadAttention", MultiHeadAttention::from_config},
      {"Normalization", Normalization::from_config},
      {"PositionEmbedding", PositionEmbedding::from_config},
      {"Reshape", Reshape::from_config},
      {"ReversibleEmbedding", ReversibleEmbedding::from_config},
      {"StringLookup", StringLookup::from_config},
      {"TextVectorization", TextVectorization::from_config},
      {"TokenAndPositionEmbedding", TokenAndPositionEmbedding::from_config},
      {"TransformerEncoder", TransformerEncoder::from_config},
  });
  return instance;
}

}  // namespace

void register_layer(std::string class_name, LayerFactory factory) {
  registry().add("register_layer", std::move(class_name), std::move(factory));
}

std::vector<std::string> registered_layers() { return registry().names(); }

std::shared_ptr<Layer> layer_from_config(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("class_name") || !config["class_name"].is_string()) {
    throw_error<ValueError>("layer_from_config: expected {{\"class_name\": ..., \"config\": {{...}}}}. Received: {}",
                            config.dump());
  }
  const std::string class_name = config["class_name"].get<std::string>();
  try {
    return registry().make("layer_from_config", class_name, config.value("config", nlohmann::json::object()));
  } catch (const nlohmann::json::exception& e) {  // a value of the wrong JSON type
    throw_error<ValueError>("layer_from_config: bad config for {}: {}", class_name, e.what());
  }
}

nlohmann::json serialize_layer(const Layer& layer) {
  return {{"class_name", layer.class_name()}, {"config", layer.get_config()}};
}

}  // namespace chorus::layers
