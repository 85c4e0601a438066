// Sequential: a plain stack of layers, each fed the previous one's output (Keras's
// Sequential). With an InputLayer first, every layer is built as it is added (so
// summary() knows the shapes); otherwise on the first call. Owns its layers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chorus/layers/input_layer.h"
#include "chorus/models/model.h"

namespace chorus::models {

class Sequential : public Model {
 public:
  explicit Sequential(std::vector<Shared<layers::Layer>> layers = {}, std::string name = "");
  Sequential(Sequential&&) noexcept = default;

  // Appends a layer. Throws ValueError for an InputLayer that is not first.
  void add(Shared<layers::Layer> layer);

  Tree call(const Tree& inputs, bool training) override;
  // {"name", "trainable", "layers": [{"class_name", "config"}, ...]}.
  nlohmann::json get_config() const override;
  static std::unique_ptr<Sequential> from_config(const nlohmann::json& config);
  std::shared_ptr<layers::Layer> move_to_heap() && override;

 private:
  std::shared_ptr<layers::InputLayer> input_;
  Tensor symbolic_output_;  // with an input: the last layer's symbolic output
  std::vector<std::shared_ptr<layers::Layer>> stack_;
};

}  // namespace chorus::models
