// BertBackbone, as KerasHub computes it:
//   x = token_embedding(token_ids) + position_embedding + segment_embedding(segment_ids)
//   x = Dropout(LayerNorm_1e-12(x)); x = encoder_i(x, padding_mask) for each layer
//   pooled = tanh(Dense(x[:, 0, :]))
#include "chorus/models/bert/bert_backbone.h"

#include "chorus/ops/ops.h"

namespace chorus::models {
namespace {

// KerasHub's bert_kernel_initializer: TruncatedNormal(stddev=0.02).
layers::Initializer bert_kernel_initializer() { return layers::initializers::truncated_normal(0.0, 0.02); }

int64_t positive_config_int(const nlohmann::json& json, const char* key) {
  if (!json.contains(key) || !json[key].is_number_integer()) {
    throw_error<ValueError>("BertBackbone config: expected an integer '{}', got {}", key,
                            json.contains(key) ? json[key].dump() : std::string("nothing"));
  }
  return json[key].get<int64_t>();
}

void check_backbone_config(const BertBackboneConfig& c, const std::string& name) {
  const std::pair<const char*, int64_t> sizes[] = {
      {"vocabulary_size", c.vocabulary_size}, {"num_layers", c.num_layers},
      {"num_heads", c.num_heads},             {"hidden_dim", c.hidden_dim},
      {"intermediate_dim", c.intermediate_dim}, {"max_sequence_length", c.max_sequence_length},
      {"num_segments", c.num_segments}};
  for (const auto& [key, value] : sizes) {
    if (value <= 0) throw_error<ValueError>("{}: expected {} > 0. Received: {}={}", name, key, key, value);
  }
  if (!(c.dropout >= 0 && c.dropout <= 1)) {
    throw_error<ValueError>("{}: expected dropout in [0, 1]. Received: dropout={}", name, c.dropout);
  }
  if (c.hidden_dim % c.num_heads != 0) {
    throw_error<ValueError>("{}: num_heads={} does not divide hidden_dim={}: each head needs hidden_dim / num_heads "
                            "dimensions",
                            name, c.num_heads, c.hidden_dim);
  }
}

}  // namespace

nlohmann::json BertBackboneConfig::to_json() const {
  return {{"vocabulary_size", vocabulary_size},   {"num_layers", num_layers},
          {"num_heads", num_heads},               {"hidden_dim", hidden_dim},
          {"intermediate_dim", intermediate_dim}, {"dropout", dropout},
          {"max_sequence_length", max_sequence_length}, {"num_segments", num_segments}};
}

BertBackboneConfig BertBackboneConfig::from_json(const nlohmann::json& json) {
  BertBackboneConfig c;
  c.vocabulary_size = positive_config_int(json, "vocabulary_size");
  c.num_layers = positive_config_int(json, "num_layers");
  c.num_heads = positive_config_int(json, "num_heads");
  c.hidden_dim = positive_config_int(json, "hidden_dim");
  c.intermediate_dim = positive_config_int(json, "intermediate_dim");
  if (json.contains("dropout")) c.dropout = json["dropout"].get<double>();
  if (json.contains("max_sequence_length")) c.max_sequence_length = positive_config_int(json, "max_sequence_length");
  if (json.contains("num_segments")) c.num_segments = positive_config_int(json, "num_segments");
  return c;
}

BertBackbone::BertBackbone(BertBackboneConfig config, std::string name)
    : Model(std::move(name)), config_(std::move(config)) {
  check_backbone_config(config_, this->name());
  const BertBackboneConfig& c = config_;
  token_embedding_ = add<layers::ReversibleEmbedding>(
      c.vocabulary_size, c.hidden_dim,
      layers::ReversibleEmbeddingOptions{.embeddings_initializer = bert_kernel_initializer(),
                                         .name = "token_embedding"});
  position_embedding_ = add<layers::PositionEmbedding>(
      c.max_sequence_length,
      layers::PositionEmbeddingOptions{.initializer = bert_kernel_initializer(), .name = "position_embedding"});
  segment_embedding_ = add<layers::Embedding>(
      c.num_segments, c.hidden_dim,
      layers::EmbeddingOptions{.embeddings_initializer = bert_kernel_initializer(), .name = "segment_embedding"});
  embeddings_layer_norm_ =
      add<layers::LayerNormalization>(layers::LayerNormalizationOptions{.epsilon = 1e-12, .name = "embeddings_layer_norm"});
  embeddings_dropout_ = add<layers::Dropout>(c.dropout, layers::DropoutOptions{.name = "embeddings_dropout"});
  for (int64_t i = 0; i < c.num_layers; ++i) {
    transformer_layers_.push_back(add<layers::TransformerEncoder>(
        c.intermediate_dim, c.num_heads,
        layers::TransformerEncoderOptions{.dropout = c.dropout,
                                          .activation = "gelu_approximate",
                                          .layer_norm_epsilon = 1e-12,
                                          .kernel_initializer = bert_kernel_initializer(),
                                          .name = "transformer_layer_" + std::to_string(i)}));
  }
  pooled_dense_ = add<layers::Dense>(
      c.hidden_dim,
      layers::DenseOptions{.activation = "tanh", .kernel_initializer = bert_kernel_initializer(), .name = "pooled_dense"});
}

BertBackbone::Inputs BertBackbone::checked_inputs(const Tree& inputs) const {
  if (!inputs.is_dict() || !inputs.contains("token_ids") || !inputs["token_ids"].is_tensor()) {
    throw_error<ValueError>("{}: expected a dict with \"token_ids\" and optionally \"segment_ids\" and "
                            "\"padding_mask\", got {}",
                            name(), inputs.empty() ? std::string("nothing") : inputs.to_string());
  }
  Inputs in{inputs["token_ids"].tensor(), {}, {}};
  const Shape& s = in.token_ids.shape();
  if (s.rank() != 2) throw_error<ShapeError>("{}: expected token_ids of shape (batch, sequence), got {}", name(), s.to_string());
  if (s[1] > config_.max_sequence_length) {
    throw_error<ValueError>("{}: token_ids of shape {} hold sequences of length {}, longer than max_sequence_length={}",
                            name(), s.to_string(), s[1], config_.max_sequence_length);
  }
  for (const char* key : {"segment_ids", "padding_mask"}) {
    if (!inputs.contains(key)) continue;
    const Tensor& t = inputs[key].tensor();
    if (t.shape() != s) {
      throw_error<ShapeError>("{}: expected {} of the shape of token_ids {}, got {}", name(), key, s.to_string(),
                              t.shape().to_string());
    }
    (std::string_view(key) == "segment_ids" ? in.segment_ids : in.padding_mask) = t;
  }
  return in;
}

Tensor BertBackbone::embed(const Inputs& in, bool training) {
  Tensor x = (*token_embedding_)(in.token_ids);
  x = ops::add(x, (*position_embedding_)(x));
  const Tensor segments = in.segment_ids.defined() ? in.segment_ids : zeros(in.token_ids.shape(), kInt32);
  x = ops::add(x, (*segment_embedding_)(segments));
  return (*embeddings_dropout_)((*embeddings_layer_norm_)(x), training);
}

Tree BertBackbone::call(const Tree& inputs, bool training) {
  const Inputs in = checked_inputs(inputs);
  Tensor x = embed(in, training);
  for (layers::TransformerEncoder* encoder : transformer_layers_) {
    x = (*encoder)(x, {.padding_mask = in.padding_mask, .training = training}).tensor();
  }
  const int64_t batch = x.dim(0), hidden = x.dim(2);
  Tensor first = ops::reshape(ops::slice(x, {0, 0, 0}, {batch, 1, hidden}), {batch, hidden});
  return Tree{{"sequence_output", x}, {"pooled_output", (*pooled_dense_)(first)}};
}

nlohmann::json BertBackbone::get_config() const {
  nlohmann::json config = config_.to_json();
  config["name"] = name();
  config["trainable"] = trainable();
  return config;
}

}  // namespace chorus::models
