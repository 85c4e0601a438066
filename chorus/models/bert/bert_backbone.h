// BertBackbone: the BERT encoder network (Devlin et al. 2018) as KerasHub's
// keras_hub.models.BertBackbone builds it: token, position and segment embeddings,
// LayerNorm, dropout, a stack of post-norm Transformer encoders, and a pooled [CLS]
// output. A Model that owns its layers; one thread at a time, like every Model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/layers/dense.h"
#include "chorus/layers/dropout.h"
#include "chorus/layers/embedding.h"
#include "chorus/layers/layer_normalization.h"
#include "chorus/layers/position_embedding.h"
#include "chorus/layers/reversible_embedding.h"
#include "chorus/layers/transformer_encoder.h"
#include "chorus/models/model.h"

namespace chorus::models {

// The architecture (KerasHub's constructor arguments; a preset fixes them by name).
struct BertBackboneConfig {
  int64_t vocabulary_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t hidden_dim = 0;
  int64_t intermediate_dim = 0;
  double dropout = 0.1;
  int64_t max_sequence_length = 512;
  int64_t num_segments = 2;

  // KerasHub's config keys, and back; from_json throws ValueError naming a missing or
  // non-integer key.
  nlohmann::json to_json() const;
  static BertBackboneConfig from_json(const nlohmann::json& json);
  friend bool operator==(const BertBackboneConfig&, const BertBackboneConfig&) = default;
};

// Inputs: {"token_ids": (B, T) int, "segment_ids": (B, T) int (optional: all 0),
// "padding_mask": (B, T) (optional: no padding; nonzero marks real tokens)}, T <=
// max_sequence_length. Outputs: {"sequence_output": (B, T, hidden_dim),
// "pooled_output": (B, hidden_dim) = tanh(Dense(sequence_output[:, 0]))}.
//
// Layers (and weight paths) as KerasHub's: token_embedding, position_embedding,
// segment_embedding, embeddings_layer_norm, embeddings_dropout, transformer_layer_<i>
// (activation tanh-approximated GELU, layer_norm_epsilon 1e-12), pooled_dense; every
// kernel and table drawn from a truncated normal of stddev 0.02.
class BertBackbone : public Model {
 public:
  // Throws ValueError naming the argument unless every size is > 0, dropout is in
  // [0, 1] and num_heads divides hidden_dim.
  explicit BertBackbone(BertBackboneConfig config, std::string name = "bert_backbone");

  Tree call(const Tree& inputs, bool training) override;

  const BertBackboneConfig& config() const { return config_; }
  layers::ReversibleEmbedding& token_embedding() const { return *token_embedding_; }
  const std::vector<layers::TransformerEncoder*>& transformer_layers() const { return transformer_layers_; }

  nlohmann::json get_config() const override;

 private:
  struct Inputs {
    Tensor token_ids, segment_ids, padding_mask;
  };
  Inputs checked_inputs(const Tree& inputs) const;
  Tensor embed(const Inputs& in, bool training);

  BertBackboneConfig config_;
  layers::ReversibleEmbedding* token_embedding_;
  layers::PositionEmbedding* position_embedding_;
  layers::Embedding* segment_embedding_;
  layers::LayerNormalization* embeddings_layer_norm_;
  layers::Dropout* embeddings_dropout_;
  std::vector<layers::TransformerEncoder*> transformer_layers_;
  layers::Dense* pooled_dense_;
};

}  // namespace chorus::models
