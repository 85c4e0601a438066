// Dense: the densely-connected layer (keras.layers.Dense): outputs =
// activation(inputs @ kernel + bias). Owns its kernel and bias; safe to call from
// several threads once built (call() only reads the weights).
#pragma once

#include <memory>
#include <string>

#include "chorus/layers/activations.h"
#include "chorus/layers/layer.h"

namespace chorus::layers {

struct DenseOptions {
  activations::Activation activation;  // default: linear (Keras's None)
  bool use_bias = true;                // default: true
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  std::string name;  // empty: "dense", "dense_1", ...
};

// Input: (batch, ..., input_dim), rank >= 2 (input_spec(): min_ndim=2, then axis -1 of
// size input_dim once built); the kernel applies to the last axis, so
// (B, T, D) -> (B, T, units). Output: (batch, ..., units). Weights: "kernel"
// (input_dim, units), "bias" (units,). Integer and bool inputs are cast to the kernel's
// dtype.
//
//   layers::Dense hidden(128, {.activation = "relu"});
//   Tensor y = hidden(x);  // x: (64, 784) -> y: (64, 128)
class Dense : public Layer {
 public:
  // Throws ValueError unless units > 0.
  explicit Dense(int64_t units, DenseOptions options = {});

  int64_t units() const { return units_; }
  const activations::Activation& activation() const { return options_.activation; }
  // Undefined before build; bias() stays undefined when use_bias is false.
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

  nlohmann::json get_config() const override;
  static std::shared_ptr<Dense> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<Dense>(std::move(*this)); }

 protected:
  void build(const Tree& inputs) override;
  Tree call(const Tree& inputs, bool training) override;

 private:
  int64_t units_;
  DenseOptions options_;
  Variable kernel_;
  Variable bias_;
};

}  // namespace chorus::layers
