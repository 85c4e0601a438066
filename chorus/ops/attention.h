// Fused scaled dot-product attention over heads (Keras ops.dot_product_attention, and the
// core of layers::MultiHeadAttention): per batch and head, scores = Q K^T by one oneDNN
// batched matmul, then scale, mask and softmax in one pass over each row, then P V by a
// second batched matmul; backward likewise. Tensors keep Keras's projected layout
// (heads next to features), so no transposes are made. Thread-safe.
#pragma once

#include "chorus/core/tensor.h"

namespace chorus::ops {

struct AttentionOptions {
  // Multiplies Q K^T. 0 (the default): 1 / sqrt(Dk), as Keras.
  double scale = 0;
  // Optional. Broadcast to (B, N, T, S) from the right (rank <= 4, each dim 1 or equal):
  // (B, 1, T, S) for Keras's (B, T, S) attention_mask. A position attends where the
  // mask is true (bool) or > 0.5 (other dtypes); elsewhere its score becomes -1e9 before
  // the softmax (Keras's Softmax(mask=...)), so a fully masked row is uniform.
  Tensor mask;
  // Optional dropout on the probabilities: (B, N, T, S) float32 multipliers (0, or
  // 1 / (1 - rate)) applied before P V. Not differentiated.
  Tensor dropout_mask;
};

struct AttentionOutputs {
  Tensor output;         // (B, T, N, Dv)
  Tensor probabilities;  // (B, N, T, S): the softmax, before dropout (Keras's attention_scores)
};

// query (B, T, N, Dk), key (B, S, N, Dk), value (B, S, N, Dv) -> AttentionOutputs.
// float32 or bfloat16 (computed in float32, outputs rounded to bfloat16). Empty dims give
// empty or zero outputs. Differentiable in query, key and value through both outputs.
// Throws DTypeError for other or differing dtypes, ShapeError naming the operands for
// ranks other than 4, batch or head counts that differ, key and value lengths that
// differ, query and key depths that differ, and masks or dropout masks that do not
// broadcast: "dot_product_attention: mask of shape (2, 5, 7) does not broadcast to the
// scores (2, 4, 5, 6)".
AttentionOutputs dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                       const AttentionOptions& options = {});

}  // namespace chorus::ops
