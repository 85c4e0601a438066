// MaskedLMHead: the prediction head of a masked language model (KerasHub's
// keras_hub.layers.MaskedLMHead): gathers the hidden states at the masked positions, then
// Dense + activation, LayerNormalization, and logits over the vocabulary through the
// token table of a ReversibleEmbedding plus an output bias. Borrows that embedding (its
// owner must outlive the head); owns the rest. Safe to call from several threads once built.
#pragma once

#include <memory>
#include <string>

#include "chorus/layers/activations.h"
#include "chorus/layers/dense.h"
#include "chorus/layers/layer.h"
#include "chorus/layers/layer_normalization.h"
#include "chorus/layers/reversible_embedding.h"

namespace chorus::layers {

struct MaskedLMHeadOptions {
  activations::Activation intermediate_activation = "relu";  // KerasHub's default; BERT passes "gelu"
  activations::Activation activation;                        // of the logits; default linear
  double layer_norm_epsilon = 1e-5;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";  // also of "output_bias"
  std::string name;                        // empty: "masked_lm_head", ...
};

// Inputs: hidden states (B, T, H) and int mask_positions (B, M), each in [0, T). Output:
// (B, M, vocabulary_size) logits, row (b, m) predicting the token at position
// mask_positions[b, m]. Weights: intermediate_dense/{kernel,bias},
// intermediate_layer_norm/{gamma,beta} and output_bias (vocabulary_size); the token table
// is the embedding's (tied: its gradient gets this head's share).
//
//   layers::MaskedLMHead head(30522, &backbone_token_embedding, {.intermediate_activation = "gelu"});
//   Tensor logits = head(sequence_output, mask_positions);  // (B, 128, H), (B, 20) -> (B, 20, 30522)
class MaskedLMHead : public Layer {
 public:
  // Throws ValueError unless vocabulary_size > 0, token_embedding is non-null and its
  // input_dim equals vocabulary_size.
  MaskedLMHead(int64_t vocabulary_size, ReversibleEmbedding* token_embedding, MaskedLMHeadOptions options = {});

  using Layer::operator();
  Tensor operator()(const Tensor& inputs, const Tensor& mask_positions) &;

  // (N, vocabulary_size) logits for rows `rows` (int32 indices b * T + t) of inputs
  // (B, T, H) seen as (B * T, H): call() for any selection of positions, e.g. only the
  // masked ones that carry weight. REQUIRES: built, rows in range.
  Tensor logits_for_rows(const Tensor& inputs, const Tensor& rows);

  int64_t vocabulary_size() const { return vocabulary_size_; }
  const Variable& output_bias() const { return output_bias_; }
  nlohmann::json get_config() const override;

 protected:
  // Throws ShapeError naming the layer unless the inputs are (B, T, H) and (B, M).
  void build(const Tree& inputs) override;
  // The inputs as {"inputs": (B, T, H), "mask_positions": (B, M)}. Throws IndexError
  // naming the layer and the entry for a position outside [0, T).
  Tree call(const Tree& inputs, bool training) override;

 private:
  int64_t vocabulary_size_;
  ReversibleEmbedding* token_embedding_;
  MaskedLMHeadOptions options_;
  Dense* intermediate_ = nullptr;
  LayerNormalization* layer_norm_ = nullptr;
  Variable output_bias_;
};

}  // namespace chorus::layers
