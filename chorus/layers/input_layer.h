// InputLayer and Input(): the entry points of a functional or Sequential model
// (Keras's keras.Input). Input() returns a symbolic tensor of shape (None, *shape),
// represented as a tensor with 0 rows. Immutable; thread-safe.
#pragma once

#include <string>

#include "chorus/layers/layer.h"

namespace chorus::layers {

class InputLayer : public Layer {
 public:
  // `shape` excludes the batch axis, as in Keras.
  explicit InputLayer(Shape shape, DType dtype = kFloat32, std::string name = "");

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }

  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override;

 protected:
  Tree call(const Tree& inputs, bool training) override;

 private:
  Shape shape_;
  DType dtype_;
};

// A symbolic input of shape (None, *shape): `auto x = layers::Input({784});`.
Tensor Input(const Shape& shape, DType dtype = kFloat32, std::string name = "");

}  // namespace chorus::layers
