// BatchNormalization: normalises each channel (`axis`) with batch statistics while
// training and with moving averages of them in inference (keras.layers.BatchNormalization,
// Ioffe & Szegedy 2015). Owns gamma, beta (trainable) and moving_mean, moving_variance
// (not trainable). A training call updates the moving statistics through
// Variable::assign; concurrent training calls would race on them.
#pragma once

#include <memory>
#include <string>

#include "chorus/layers/layer.h"

namespace chorus::layers {

struct BatchNormalizationOptions {
  int axis = -1;           // the channel axis (negative: from the end)
  double momentum = 0.99;  // moving = moving * momentum + batch * (1 - momentum)
  double epsilon = 1e-3;   // added to the variance
  bool center = true;      // add the learned offset beta
  bool scale = true;       // multiply by the learned gamma
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  Initializer moving_mean_initializer = "zeros";
  Initializer moving_variance_initializer = "ones";
  std::string name;  // empty: "batch_normalization", ...
};

// Input: any shape with a channel axis of size C; once built, input_spec() holds the
// inputs to the first call's rank and C (Keras's ndim and axes={axis: C}). Output: the same shape:
//   y = (x - mean) / sqrt(variance + epsilon) * gamma + beta
// where, in training (and when the layer is trainable), mean and the biased variance are
// over every axis but `axis`, and the moving statistics are updated; in inference they
// are moving_mean and moving_variance. Weights (C,): "gamma", "beta", "moving_mean",
// "moving_variance". An empty training batch leaves the moving statistics unchanged.
// bfloat16 inputs are normalised in float32.
class BatchNormalization : public Layer {
 public:
  // Throws ValueError for epsilon < 0 or momentum outside [0, 1].
  explicit BatchNormalization(BatchNormalizationOptions options = {});

  // Undefined before build (and gamma/beta when !scale / !center).
  const Variable& gamma() const { return gamma_; }
  const Variable& beta() const { return beta_; }
  const Variable& moving_mean() const { return moving_mean_; }
  const Variable& moving_variance() const { return moving_variance_; }

  nlohmann::json get_config() const override;
  static std::shared_ptr<BatchNormalization> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<BatchNormalization>(std::move(*this)); }

 protected:
  // Throws IndexError naming the layer when `axis` is outside the input's rank.
  void build(const Tree& inputs) override;
  // Throws ShapeError naming the layer for a different rank or channel count.
  Tree call(const Tree& inputs, bool training) override;

 private:
  void update_moving_statistics(const Tensor& mean, const Tensor& variance) const;

  BatchNormalizationOptions options_;
  int rank_ = 0;  // the input rank seen at build
  int axis_ = 0;  // resolved
  Variable gamma_;
  Variable beta_;
  Variable moving_mean_;
  Variable moving_variance_;
};

}  // namespace chorus::layers
