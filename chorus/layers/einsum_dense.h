// EinsumDense: a dense layer whose kernel meets the inputs in an einsum equation
// (keras.layers.EinsumDense), as MultiHeadAttention's and BERT's projections use it.
// Supported: the equations one matmul computes,
//   "<free><contracted>,<contracted><out>-><free><out>"  (optionally "...<free>..." on
//   the input and output: "...b,bc->...c"),
// e.g. "ab,bc->ac" (Dense), "abc,cd->abd", "abc,cde->abde" (attention's query, key and
// value), "abcd,cde->abe" (attention's output). They run as a reshape and one matmul.
// Owns its kernel and bias; safe to call from several threads once built.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chorus/layers/activations.h"
#include "chorus/layers/layer.h"

namespace chorus::layers {

struct EinsumDenseOptions {
  activations::Activation activation;  // default: linear (Keras's None)
  // The output letters that get a bias, e.g. "de"; empty (the default): no bias (None).
  // The bias spans the output from its first such letter on, 1 on letters not listed
  // (Keras's rule): "abde" with "de" -> bias (N, H).
  std::string bias_axes;
  // Variance-scaling initializers get the kernel's contracted axes as fan-in and its
  // output axes as fan-out (Keras 3): a (C, N, H) kernel has fans C and N * H.
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  std::string name;  // empty: "einsum_dense", "einsum_dense_1", ...
};

// Input: a tensor of the equation's input rank (with "...": at least one more, the batch
// and any further leading axes); once built, input_spec() also holds the contracted axes
// to their first-call sizes (Keras sets ndim only, fixing "..." to one rank). Output: the free dims followed by the kernel's output
// dims. Weights: "kernel" (the kernel spec's dims), "bias" (see bias_axes).
//
//   layers::EinsumDense query("abc,cde->abde", {-1, 12, 64}, {.bias_axes = "de"});
//   Tensor q = query(x);  // x: (B, T, 768) -> q: (B, T, 12, 64)
class EinsumDense : public Layer {
 public:
  // `output_shape`: the output's dims after the batch axis (with "...": after the axes it
  // stands for), -1 where the input gives it (Keras's None). Throws ValueError for a
  // malformed or unsupported equation (naming the supported forms), an output_shape of
  // the wrong length, or bias_axes letters that are not output letters.
  EinsumDense(std::string equation, std::vector<int64_t> output_shape, EinsumDenseOptions options = {});

  const std::string& equation() const { return equation_; }
  const std::vector<int64_t>& partial_output_shape() const { return output_shape_; }
  const Variable& kernel() const { return kernel_; }  // undefined before build
  const Variable& bias() const { return bias_; }      // undefined before build or without bias_axes

  nlohmann::json get_config() const override;
  static std::shared_ptr<EinsumDense> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<EinsumDense>(std::move(*this)); }

 protected:
  // Throws ShapeError naming the layer for an input whose dims disagree with
  // output_shape on a shared letter (input_spec() rejects a wrong rank first).
  void build(const Tree& inputs) override;
  Tree call(const Tree& inputs, bool training) override;

 private:
  // The letters of the equation, split by role: input = free + contracted,
  // kernel = contracted + out, output = free + out.
  std::string free_, contracted_, out_;
  bool elided_ = false;  // "..." leads the input and output

  // The input's rank as the equation gives it: ndim, or with "..." a min_ndim.
  InputSpec rank_spec() const;

  std::string equation_;
  std::vector<int64_t> output_shape_;
  EinsumDenseOptions options_;
  std::vector<int64_t> contracted_dims_, out_dims_;  // set by build
  Variable kernel_;
  Variable bias_;
};

}  // namespace chorus::layers
