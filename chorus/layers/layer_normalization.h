// LayerNormalization: normalises each example over `axis` to mean 0 and variance 1, then
// scales by gamma and shifts by beta (keras.layers.LayerNormalization, Ba et al. 2016).
// Owns gamma and beta; safe to call from several threads once built.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chorus/layers/layer.h"

namespace chorus::layers {

struct LayerNormalizationOptions {
  std::vector<int> axis = {-1};  // the axes normalised over (negative: from the end)
  double epsilon = 1e-3;         // added to the variance
  bool center = true;            // add the learned offset beta
  bool scale = true;             // multiply by the learned gamma
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  std::string name;  // empty: "layer_normalization", ...
};

// Input: any shape whose rank covers `axis`; once built, input_spec() holds later inputs
// to the first call's rank and dims on `axis` (Keras sets no spec). Output: the same shape:
//   y = (x - mean) / sqrt(variance + epsilon) * gamma + beta,
// with mean and the (biased) variance over `axis`. Weights: "gamma" and "beta", shaped as
// the input's dims on `axis`. bfloat16 inputs are normalised in float32.
class LayerNormalization : public Layer {
 public:
  // Throws ValueError for an empty axis list or epsilon < 0.
  explicit LayerNormalization(LayerNormalizationOptions options = {});

  const Variable& gamma() const { return gamma_; }  // undefined before build or if !scale
  const Variable& beta() const { return beta_; }    // undefined before build or if !center

  nlohmann::json get_config() const override;
  static std::shared_ptr<LayerNormalization> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<LayerNormalization>(std::move(*this)); }

 protected:
  // Throws IndexError naming the layer for an axis outside the input's rank.
  void build(const Tree& inputs) override;
  Tree call(const Tree& inputs, bool training) override;

 private:
  std::vector<int> resolve_axes(const Shape& shape) const;

  LayerNormalizationOptions options_;
  int rank_ = 0;           // the input rank seen at build
  std::vector<int> axes_;  // resolved, sorted
  Shape weight_shape_;     // the input dims on axes_
  Variable gamma_;
  Variable beta_;
};

}  // namespace chorus::layers
