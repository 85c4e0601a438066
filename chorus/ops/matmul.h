// Matrix product on oneDNN (Keras ops.matmul, NumPy semantics): 1-D operands are
// promoted and the added axis removed; leading batch axes broadcast. float32, and
// bfloat16 (on AMX where the CPU has it) with float32 accumulation and bfloat16 output.
// Thread-safe: oneDNN primitives are cached per thread.
#pragma once

#include "chorus/core/tensor.h"

namespace chorus::ops {

struct MatmulOptions {
  bool transpose_a = false;  // use the last two axes of a swapped (no copy is made)
  bool transpose_b = false;
};

Tensor matmul(const Tensor& a, const Tensor& b, const MatmulOptions& options = {});

}  // namespace chorus::ops
