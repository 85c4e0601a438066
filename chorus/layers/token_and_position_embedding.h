// TokenAndPositionEmbedding: token embedding plus learned position embedding, summed
// (keras_hub.layers.TokenAndPositionEmbedding). Owns its two sublayers and their tables;
// safe to call from several threads once built.
#pragma once

#include <memory>
#include <string>

#include "chorus/layers/layer.h"
#include "chorus/layers/position_embedding.h"
#include "chorus/layers/reversible_embedding.h"

namespace chorus::layers {

struct TokenAndPositionEmbeddingOptions {
  // Passed to the token ReversibleEmbedding (see ReversibleEmbeddingOptions).
  bool tie_weights = true;
  // Used, as a copy, for both tables (Keras clones it for each).
  Initializer embeddings_initializer = "uniform";
  std::string name;  // empty: "token_and_position_embedding", ...
};

// Input: int token ids (batch..., T), rank >= 1, each in [0, vocabulary_size), T <=
// sequence_length. Output: (batch..., T, embedding_dim) float32, token_embedding(ids) +
// position_embedding(that). Sublayers "token_embedding" (ReversibleEmbedding, weights
// "embeddings" and, untied, "reverse_embeddings") and "position_embedding"
// (PositionEmbedding, weight "embeddings"). Their weight paths are Keras 3's,
// "<name>/token_embedding/embeddings", so two of these layers in one model do not clash.
// To do so without a path scope in Layer, the sublayers are named
// "<name>/token_embedding" and "<name>/position_embedding" (Keras: "token_embedding"),
// which their error messages show.
//
//   layers::TokenAndPositionEmbedding embed(30522, 512, 768);
//   Tensor x = embed(token_ids);                        // (B, 128) -> (B, 128, 768)
//   Tensor logits = embed.token_embedding().reverse(h); // (B, 128, 768) -> (B, 128, 30522)
class TokenAndPositionEmbedding : public Layer {
 public:
  // Throws ValueError unless vocabulary_size, sequence_length and embedding_dim are > 0.
  TokenAndPositionEmbedding(int64_t vocabulary_size, int64_t sequence_length, int64_t embedding_dim,
                            TokenAndPositionEmbeddingOptions options = {});

  int64_t vocabulary_size() const { return vocabulary_size_; }
  int64_t sequence_length() const { return sequence_length_; }
  int64_t embedding_dim() const { return embedding_dim_; }
  // The sublayers, owned by this layer (valid as long as it is, moves included).
  ReversibleEmbedding& token_embedding() const { return *token_embedding_; }
  PositionEmbedding& position_embedding() const { return *position_embedding_; }

  nlohmann::json get_config() const override;
  // Reads Keras's config; throws ValueError for mask_zero=true (chorus has no masks).
  static std::shared_ptr<TokenAndPositionEmbedding> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override {
    return std::make_shared<TokenAndPositionEmbedding>(std::move(*this));
  }

 protected:
  // Builds both tables (input_spec(): min_ndim=1, ids with a batch axis).
  void build(const Tree& inputs) override;
  Tree call(const Tree& inputs, bool training) override;

 private:
  int64_t vocabulary_size_;
  int64_t sequence_length_;
  int64_t embedding_dim_;
  TokenAndPositionEmbeddingOptions options_;
  ReversibleEmbedding* token_embedding_;
  PositionEmbedding* position_embedding_;
};

}  // namespace chorus::layers
