// Flatten: collapses every axis but the batch axis (keras.layers.Flatten). No weights;
// safe to call from several threads.
#pragma once

#include <memory>
#include <string>

#include "chorus/layers/layer.h"

namespace chorus::layers {

struct FlattenOptions {
  std::string name;  // empty: "flatten", "flatten_1", ...
};

// Input: (batch, d1, ..., dk), rank >= 1 (input_spec(): min_ndim=1). Output: (batch, d1 * ... * dk), a view of the
// input; (batch,) becomes (batch, 1). Works on an empty batch too.
class Flatten : public Layer {
 public:
  explicit Flatten(FlattenOptions options = {});

  // Keras's config also names the data format, which is always channels_last here.
  nlohmann::json get_config() const override;
  static std::shared_ptr<Flatten> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<Flatten>(std::move(*this)); }

 protected:
  Tree call(const Tree& inputs, bool training) override;
};

}  // namespace chorus::layers
