// Add: sums a list of tensors elementwise (keras.layers.Add). No weights; safe to call
// from several threads.
#pragma once

#include <memory>
#include <string>

#include "chorus/layers/layer.h"

namespace chorus::layers {

struct AddOptions {
  std::string name;  // empty: "add", "add_1", ...
};

// Input: a list Tree of tensors of one dtype and batch size whose other dims broadcast
// (NumPy rules); a lower-rank input gets size-1 axes after the batch axis first, as in
// Keras. Output: the sum, of the broadcast shape.
//
//   layers::Add add;
//   Tensor y = add(Tree::list({x, shortcut})).tensor();
class Add : public Layer {
 public:
  explicit Add(AddOptions options = {});

  static std::shared_ptr<Add> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<Add>(std::move(*this)); }

 protected:
  // Throws ValueError unless the input is a non-empty list of tensors; ShapeError naming
  // the layer for different batch sizes or shapes that do not broadcast.
  Tree call(const Tree& inputs, bool training) override;
};

}  // namespace chorus::layers
