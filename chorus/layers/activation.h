// Activation: applies an activation function to its input (keras.layers.Activation).
// No weights; safe to call from several threads.
#pragma once

#include <memory>
#include <string>

#include "chorus/layers/activations.h"
#include "chorus/layers/layer.h"

namespace chorus::layers {

struct ActivationOptions {
  std::string name;  // empty: "activation", "activation_1", ...
};

// Input: any shape. Output: the same shape (softmax and log_softmax act on the last axis).
//
//   layers::Activation softmax("softmax");
class Activation : public Layer {
 public:
  // A name is checked when the activations::Activation is made (ValueError listing the
  // known names).
  explicit Activation(activations::Activation activation, ActivationOptions options = {});

  const activations::Activation& activation() const { return activation_; }

  nlohmann::json get_config() const override;
  static std::shared_ptr<Activation> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<Activation>(std::move(*this)); }

 protected:
  Tree call(const Tree& inputs, bool training) override;

 private:
  activations::Activation activation_;
};

}  // namespace chorus::layers
