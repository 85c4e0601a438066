// Reshape: gives each example a new shape (keras.layers.Reshape). No weights; safe to
// call from several threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chorus/layers/layer.h"

namespace chorus::layers {

struct ReshapeOptions {
  std::string name;  // empty: "reshape", "reshape_1", ...
};

// Input: (batch, ...) with the same number of elements per example as target_shape.
// Output: (batch, *target_shape), a view of the input. One entry of target_shape may be
// -1: it is inferred from the input.
//
//   layers::Reshape to_image({28, 28, 1});  // (B, 784) -> (B, 28, 28, 1)
class Reshape : public Layer {
 public:
  // target_shape excludes the batch axis. Throws ValueError for a dimension that is
  // neither positive nor -1, or for two -1s.
  explicit Reshape(std::vector<int64_t> target_shape, ReshapeOptions options = {});

  const std::vector<int64_t>& target_shape() const { return target_shape_; }

  nlohmann::json get_config() const override;
  static std::shared_ptr<Reshape> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<Reshape>(std::move(*this)); }

 protected:
  // Throws ShapeError naming the layer when the example sizes differ.
  Tree call(const Tree& inputs, bool training) override;

 private:
  std::vector<int64_t> target_shape_;
};

}  // namespace chorus::layers
