// ReversibleEmbedding: an Embedding that can also project hidden states back to the
// vocabulary (keras.layers.ReversibleEmbedding, keras_hub.layers.ReversibleEmbedding), the
// tied input/output embedding of language models. Owns its tables; safe to call from
// several threads once built.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "chorus/layers/embedding.h"

namespace chorus::layers {

struct ReversibleEmbeddingOptions {
  // true: reverse() multiplies by the transpose of "embeddings" (the same Variable, so the
  // gradients of both uses add up); false: by a separate trainable "reverse_embeddings"
  // kernel of shape (output_dim, input_dim), drawn from embeddings_initializer.
  bool tie_weights = true;
  // Keras's "uniform": RandomUniform(-0.05, 0.05).
  Initializer embeddings_initializer = "uniform";
  // Set: reverse() returns tanh(logits / cap) * cap (Keras's logit_soft_cap). Must be > 0.
  std::optional<double> logit_soft_cap;
  std::string name;  // empty: "reversible_embedding", "reversible_embedding_1", ...
};

// Forward (operator()): exactly Embedding: int indices S -> S + (output_dim,), with
// Embedding's IndexError for an index outside [0, input_dim).
// Reverse (reverse()): hidden states (..., output_dim) -> logits (..., input_dim), that is
// x @ embeddings^T (tied) or x @ reverse_embeddings (untied). Keras selects it with the
// call argument `reverse=True`; chorus's Layer::call takes no per-call arguments, so
// reverse is a method of its own. It builds the layer if needed and computes like an op:
// use it in eager code, in a subclassed model, or inside another layer's call() (as
// KerasHub's MaskedLMHead does); a functional graph records layer calls only, so at the
// top level of a functional model wrap it in a layer.
//
//   layers::ReversibleEmbedding embedding(30522, 768);
//   Tensor hidden = embedding(token_ids);         // (B, T) -> (B, T, 768)
//   Tensor logits = embedding.reverse(hidden);    // (B, T, 768) -> (B, T, 30522)
//
// The table keeps Embedding's sparse gradients: a forward-only use (a classifier on a
// tied backbone) exchanges rows under data parallelism; reverse() adds a dense gradient,
// which the tape folds in (GradientTape's sparse gradients are then dense).
class ReversibleEmbedding : public Embedding {
 public:
  // Throws ValueError unless input_dim > 0, output_dim > 0 and logit_soft_cap (if set) > 0.
  ReversibleEmbedding(int64_t input_dim, int64_t output_dim, ReversibleEmbeddingOptions options = {});

  bool tie_weights() const { return tie_weights_; }
  // The (output_dim, input_dim) kernel of an untied layer; undefined before build and
  // when tied.
  const Variable& reverse_embeddings() const { return reverse_embeddings_; }

  // (..., output_dim) float hidden states -> (..., input_dim) logits. Throws ShapeError
  // naming the layer when the last axis is not output_dim:
  // "token_embedding: reverse expected hidden states with last dim 768, got shape (2, 5, 64)".
  Tensor reverse(const Tensor& hidden);
  // reverse(hidden) + bias, a bias of the logits' last dimension added inside the product
  // where no logit_soft_cap comes between (KerasHub's MaskedLMHead adds its output bias so).
  Tensor reverse(const Tensor& hidden, const Tensor& bias);

  nlohmann::json get_config() const override;
  // Reads Keras's config; throws ValueError for a "reverse_dtype" or "mask_zero" chorus
  // does not implement (anything but null / false).
  static std::shared_ptr<ReversibleEmbedding> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<ReversibleEmbedding>(std::move(*this)); }

 protected:
  void build(const Tree& inputs) override;

 private:
  bool tie_weights_;
  Initializer reverse_initializer_;
  std::optional<double> logit_soft_cap_;
  Variable reverse_embeddings_;
};

}  // namespace chorus::layers
