// Concatenate: joins a list of tensors along one axis (keras.layers.Concatenate). No
// weights; safe to call from several threads.
#pragma once

#include <memory>
#include <string>

#include "chorus/layers/layer.h"

namespace chorus::layers {

struct ConcatenateOptions {
  int axis = -1;     // the axis to join along (negative: from the end)
  std::string name;  // empty: "concatenate", "concatenate_1", ...
};

// Input: a list Tree of tensors of one rank and dtype whose shapes agree except on
// `axis`. Output: their concatenation.
//
//   layers::Concatenate concat;
//   Tensor y = concat(Tree::list({a, b})).tensor();  // (B, 3), (B, 5) -> (B, 8)
class Concatenate : public Layer {
 public:
  explicit Concatenate(ConcatenateOptions options = {});

  int axis() const { return options_.axis; }

  nlohmann::json get_config() const override;
  static std::shared_ptr<Concatenate> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<Concatenate>(std::move(*this)); }

 protected:
  // Throws ValueError unless the input is a non-empty list of tensors, ShapeError naming
  // the layer for mismatched ranks or shapes, IndexError for an axis out of range.
  Tree call(const Tree& inputs, bool training) override;

 private:
  ConcatenateOptions options_;
};

}  // namespace chorus::layers
