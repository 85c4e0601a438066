// Matrix product on oneDNN (Keras ops.matmul, NumPy semantics): 1-D operands are
// promoted and the added axis removed; leading batch axes broadcast. float32, and
// bfloat16 (on AMX where the CPU has it) with float32 accumulation and bfloat16 output.
// Thread-safe: oneDNN primitives are cached per thread.
#pragma once

#include "chorus/core/tensor.h"

namespace chorus::ops {

struct MatmulOptions {
  bool transpose_a = false;  // use the last two axes of a swapped (no copy is made)
  bool transpose_b = false;  // likewise for b. Both are ignored for a 1-D operand.
};

// a (.., M, K) @ b (.., K, N) -> (.., M, N), where the batch axes (..) broadcast as in
// NumPy: (B, M, K) @ (K, N) -> (B, M, N), (B, 1, M, K) @ (H, K, N) -> (B, H, M, N).
// A 1-D a (K,) is read as (1, K) and a 1-D b (K,) as (K, 1), and that axis is dropped
// from the result: (K,) @ (K,) -> (). Empty dims give empty results; K == 0 gives zeros.
// Returns a fresh tensor of a's dtype. Differentiable: dA = G @ B^T, dB = A^T @ G,
// summed over broadcast batch axes.
// Throws DTypeError if the dtypes differ or are not float32/bfloat16; ShapeError for a
// rank-0 operand, for inner dimensions that differ ("matmul: inner dimensions differ:
// (64, 785) @ (784, 256): 785 vs 784"), and for batch axes that do not broadcast.
Tensor matmul(const Tensor& a, const Tensor& b, const MatmulOptions& options = {});

// matmul(a, b, options) + bias, with a 1-D bias of the result's last dimension and a's
// dtype added inside the product (oneDNN adds it to the float32 accumulator as it writes
// the result), saving a pass over the result; other biases broadcast as ops::add does,
// by a separate add. The bias's gradient sums the result's gradient over all other axes.
Tensor matmul(const Tensor& a, const Tensor& b, const Tensor& bias, const MatmulOptions& options = {});

}  // namespace chorus::ops
