// PositionEmbedding: a learned embedding of positions 0, 1, ... along the sequence axis
// (keras_hub.layers.PositionEmbedding, BERT's position embedding). Owns its table; safe to
// call from several threads once built.
#pragma once

#include <memory>
#include <string>

#include "chorus/layers/layer.h"

namespace chorus::layers {

struct PositionEmbeddingOptions {
  Initializer initializer = "glorot_uniform";  // KerasHub's default
  std::string name;                            // empty: "position_embedding", "position_embedding_1", ...
};

// Input: (batch..., T, feature), rank >= 2; only its shape is read. Output: the same shape,
// rows 0..T-1 of the (sequence_length, feature) "embeddings" table broadcast over the
// leading axes, so T may be at most sequence_length. The table's gradient is the output
// gradient summed over those axes (rows T.. get none); the input gets no gradient.
//
//   layers::PositionEmbedding positions(512);
//   Tensor x = tokens + positions(tokens);  // tokens: (B, 128, 768)
class PositionEmbedding : public Layer {
 public:
  // Throws ValueError unless sequence_length > 0.
  explicit PositionEmbedding(int64_t sequence_length, PositionEmbeddingOptions options = {});

  int64_t sequence_length() const { return sequence_length_; }
  // The (sequence_length, feature) table (Keras's `position_embeddings`, a weight named
  // "embeddings"); undefined before build (the first call).
  const Variable& position_embeddings() const { return embeddings_; }

  nlohmann::json get_config() const override;
  static std::shared_ptr<PositionEmbedding> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<PositionEmbedding>(std::move(*this)); }

 protected:
  // input_spec(): min_ndim=2, then the feature axis (-1) the table was built for.
  void build(const Tree& inputs) override;
  // Throws ValueError when T > sequence_length, naming both ("position_embedding: the
  // input's sequence length 12 (axis -2 of (2, 12, 8)) exceeds sequence_length 10").
  Tree call(const Tree& inputs, bool training) override;

 private:
  int64_t sequence_length_;
  PositionEmbeddingOptions options_;
  Variable embeddings_;
};

}  // namespace chorus::layers
