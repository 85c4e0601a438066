// TransformerEncoder: one encoder block of Vaswani et al. 2017 (KerasHub's
// keras_hub.layers.TransformerEncoder): self-attention and a two-layer feedforward
// network, each with dropout, a residual connection and layer normalisation — after
// the residual (post-norm, BERT) by default, or before each block (normalize_first,
// GPT-2). Owns its sublayers; safe to call from several threads once built.
#pragma once

#include <memory>
#include <string>

#include "chorus/layers/activations.h"
#include "chorus/layers/dense.h"
#include "chorus/layers/dropout.h"
#include "chorus/layers/layer.h"
#include "chorus/layers/layer_normalization.h"
#include "chorus/layers/multi_head_attention.h"

namespace chorus::layers {

struct TransformerEncoderOptions {
  double dropout = 0;                                 // attention, residual and feedforward dropout
  activations::Activation activation = "relu";        // of the intermediate dense layer
  double layer_norm_epsilon = 1e-5;
  // BERT passes initializers::truncated_normal(0.0, 0.02).
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  bool normalize_first = false;  // false: LN(x + Dropout(f(x))); true: x + Dropout(f(LN(x)))
  std::string name;              // empty: "transformer_encoder", ...
};

// The call arguments after the inputs (KerasHub's keyword arguments).
struct TransformerEncoderCall {
  Tensor padding_mask;    // optional (B, T): nonzero for real tokens, 0 for padding
  Tensor attention_mask;  // optional (B, T, T); merged with padding_mask by minimum
  bool return_attention_scores = false;  // also return the (B, N, T, T) probabilities
  bool training = false;
};

// Input: (B, T, hidden_dim). Output: the same shape. The attention has num_heads heads of
// key_dim = hidden_dim / num_heads. Weights (under the layer's path):
// self_attention_layer/{query,key,value,attention_output}/{kernel,bias},
// self_attention_layer_norm/{gamma,beta}, feedforward_layer_norm/{gamma,beta},
// feedforward_intermediate_dense/{kernel,bias}, feedforward_output_dense/{kernel,bias}.
//
//   layers::TransformerEncoder encoder(3072, 12, {.activation = "gelu"});
//   Tensor y = encoder(x, {.padding_mask = mask}).tensor();  // x: (B, T, 768)
// As a Layer it takes a tensor, or a dict with "inputs" and optionally "padding_mask"
// and "attention_mask" (the functional API: a BERT backbone's encoder stack).
class TransformerEncoder : public Layer {
 public:
  // Throws ValueError unless intermediate_dim > 0, num_heads > 0, 0 <= dropout <= 1 and
  // layer_norm_epsilon >= 0.
  TransformerEncoder(int64_t intermediate_dim, int64_t num_heads, TransformerEncoderOptions options = {});

  using Layer::operator();
  // The encoded inputs, or [outputs, scores] when args.return_attention_scores.
  Tree operator()(const Tensor& inputs, const TransformerEncoderCall& args) &;

  int64_t intermediate_dim() const { return intermediate_dim_; }
  int64_t num_heads() const { return num_heads_; }
  // The sublayers; nullptr before build.
  const MultiHeadAttention* self_attention_layer() const { return attention_; }
  const LayerNormalization* self_attention_layer_norm() const { return attention_norm_; }
  const LayerNormalization* feedforward_layer_norm() const { return feedforward_norm_; }
  const Dense* feedforward_intermediate_dense() const { return intermediate_; }
  const Dense* feedforward_output_dense() const { return output_; }

  nlohmann::json get_config() const override;
  static std::shared_ptr<TransformerEncoder> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override {
    return std::make_shared<TransformerEncoder>(std::move(*this));
  }

 protected:
  // Throws ShapeError naming the layer unless the inputs are (B, T, hidden_dim), and
  // ValueError when num_heads does not divide hidden_dim.
  void build(const Tree& inputs) override;
  // Throws ShapeError naming the layer for a padding_mask that is not (B, T) or an
  // attention_mask that is not (B, T, T) for inputs (B, T, hidden_dim).
  Tree call(const Tree& inputs, bool training) override;

 private:
  struct Inputs {
    Tensor x, padding_mask, attention_mask;
  };
  Inputs unpack(const Tree& inputs) const;
  Tensor merged_mask(const Inputs& in) const;
  Tree encode(const Inputs& in, bool training, bool return_scores);

  int64_t intermediate_dim_, num_heads_;
  TransformerEncoderOptions options_;
  MultiHeadAttention* attention_ = nullptr;
  LayerNormalization* attention_norm_ = nullptr;
  Dropout* attention_dropout_ = nullptr;
  LayerNormalization* feedforward_norm_ = nullptr;
  Dense* intermediate_ = nullptr;
  Dense* output_ = nullptr;
  Dropout* feedforward_dropout_ = nullptr;
};

}  // namespace chorus::layers
