// MultiHeadAttention: multi-headed scaled dot-product attention
// (keras.layers.MultiHeadAttention, Vaswani et al. 2017): query, key and value are
// projected per head by EinsumDense sublayers, attended by the fused
// ops::dot_product_attention, and projected back. Owns its four projections; safe to
// call from several threads once built.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chorus/layers/dropout.h"
#include "chorus/layers/einsum_dense.h"
#include "chorus/layers/layer.h"

namespace chorus::layers {

struct MultiHeadAttentionOptions {
  int64_t value_dim = 0;               // per-head size of the value; 0 (None): key_dim
  double dropout = 0;                  // dropout rate on the attention probabilities
  bool use_bias = true;                // biases in the four projections
  std::vector<int64_t> output_shape;   // dims after the query's; empty (None): the query's last dim
  // The query axes attended over (1 .. rank - 2, negative from the query's rank); empty
  // (None): every axis but the batch and the features.
  std::vector<int> attention_axes;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  std::optional<uint64_t> seed;  // of the dropout
  std::string name;              // empty: "multi_head_attention", ...
};

// The call arguments after query and value (Keras's keyword arguments).
struct MultiHeadAttentionCall {
  Tensor key;  // undefined: value
  // Optional (B, T, S): 1 / true where query t may attend to key s, 0 / false where not
  // (nonzero attends). Fewer leading axes broadcast ((T, S)); the heads always do.
  Tensor attention_mask;
  // Keras's use_causal_mask: query t attends to keys s <= t only (a (T, S) lower
  // triangle, combined with attention_mask by logical and), as a decoder's
  // self-attention needs. Inputs of rank 3 and tensors only: with the functional API's
  // symbolic inputs it throws ValueError.
  bool use_causal_mask = false;
  // Also return the probabilities (B, N, T, S), before dropout. Tensors only: with the
  // functional API's symbolic inputs it throws ValueError.
  bool return_attention_scores = false;
  bool training = false;  // dropout is applied only when training
};

// Inputs: query (B, T, dim), value (B, S, dim_v), key (B, S, dim_k) (higher ranks too:
// (B, T1, .., Tm, dim) with attention over attention_axes). Output: (B, T, E) with E the
// query's last dim (or output_shape). Weights, as Keras names them: query/kernel
// (dim, N, key_dim), query/bias (N, key_dim), key/kernel, key/bias, value/kernel
// (dim_v, N, value_dim), value/bias, attention_output/kernel (N, value_dim, E),
// attention_output/bias (E,).
//
//   layers::MultiHeadAttention mha(8, 64);
//   Tensor y = mha(x, x).tensor();                                   // self-attention
//   Tree both = mha(q, v, {.attention_mask = m, .return_attention_scores = true});
//   // both[0]: (B, T, dim), both[1]: (B, 8, T, S)
// As a Layer it takes [query, value], [query, value, key] or a dict with "query",
// "value" and optionally "key" and "attention_mask".
class MultiHeadAttention : public Layer {
 public:
  // Throws ValueError unless num_heads > 0, key_dim > 0, value_dim >= 0,
  // 0 <= dropout <= 1 and output_shape's dims are > 0.
  MultiHeadAttention(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options = {});

  using Layer::operator();
  // The attention output, or [output, scores] when args.return_attention_scores.
  Tree operator()(const Tensor& query, const Tensor& value, const MultiHeadAttentionCall& args) &;
  Tree operator()(const Tensor& query, const Tensor& value) & { return (*this)(query, value, {}); }

  int64_t num_heads() const { return num_heads_; }
  int64_t key_dim() const { return key_dim_; }
  int64_t value_dim() const { return options_.value_dim > 0 ? options_.value_dim : key_dim_; }
  double dropout() const { return options_.dropout; }
  // The projections; nullptr before build.
  const EinsumDense* query_dense() const { return query_; }
  const EinsumDense* key_dense() const { return key_; }
  const EinsumDense* value_dense() const { return value_; }
  const EinsumDense* output_dense() const { return output_; }

  nlohmann::json get_config() const override;
  static std::shared_ptr<MultiHeadAttention> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override {
    return std::make_shared<MultiHeadAttention>(std::move(*this));
  }

 protected:
  // Throws ShapeError naming the layer for ranks below 3, or a key and value that differ
  // in any but their last dim.
  void build(const Tree& inputs) override;
  // Throws ShapeError naming the layer for inputs that differ from the build shapes, a
  // query and key/value of different batch (or non-attention) dims, or an
  // attention_mask that does not broadcast to (B, T, S).
  Tree call(const Tree& inputs, bool training) override;

 private:
  struct Inputs {
    Tensor query, value, key, attention_mask;
  };
  Inputs unpack(const Tree& inputs) const;
  Tree attend(const Inputs& in, bool training, bool return_scores);
  std::vector<int> resolved_axes(int query_rank) const;

  int64_t num_heads_, key_dim_;
  MultiHeadAttentionOptions options_;
  EinsumDense* query_ = nullptr;
  EinsumDense* key_ = nullptr;
  EinsumDense* value_ = nullptr;
  Dropout* dropout_ = nullptr;
  EinsumDense* output_ = nullptr;
};

}  // namespace chorus::layers
