#include "chorus/layers/input_layer.h"

#include <algorithm>

#include "chorus/core/error.h"
#include "chorus/layers/layer_util.h"
#include "chorus/layers/node.h"

namespace chorus::layers {
namespace {

DType dtype_from_name(const std::string& name) {
  for (DType d : {kFloat32, kBFloat16, kInt32, kInt64, kBool, kString}) {
    if (dtype_name(d) == name) return d;
  }
  throw_error<ValueError>("InputLayer: unknown dtype '{}'", name);
}

}  // namespace

InputLayer::InputLayer(Shape shape, DType dtype, std::string name)
    : Layer("InputLayer", std::move(name)), shape_(shape), dtype_(dtype) {
  for (int64_t d : shape_) {
    if (d < 0) throw_error<ValueError>("{}: expected a shape of non-negative dims. Received: shape={}", this->name(), shape_.to_string());
  }
}

Tree InputLayer::call(const Tree& inputs, bool /*training*/) { return inputs; }

nlohmann::json InputLayer::get_config() const {
  nlohmann::json batch_shape = nlohmann::json::array({nullptr});
  for (int64_t d : shape_) batch_shape.push_back(d);
  return {{"name", name()}, {"batch_shape", batch_shape}, {"dtype", std::string(dtype_name(dtype_))}};
}

std::shared_ptr<Layer> InputLayer::from_config(const nlohmann::json& config) {
  std::vector<int64_t> dims;
  const auto& batch_shape = config.at("batch_shape");
  // The batch dimension (first) is None; the others must be whole numbers, not 4.5.
  const bool ok = batch_shape.is_array() && !batch_shape.empty() &&
                  std::all_of(batch_shape.begin() + 1, batch_shape.end(),
                              [](const nlohmann::json& d) { return detail::config_type_matches<int64_t>(d); });
  if (!ok) {
    throw_error<ValueError>("InputLayer.from_config: unexpected value for 'batch_shape': {}, expected [null, integers...]",
                            batch_shape.dump());
  }
  for (size_t i = 1; i < batch_shape.size(); ++i) dims.push_back(batch_shape[i].get<int64_t>());
  return std::make_shared<InputLayer>(Shape(dims), dtype_from_name(config.at("dtype").get<std::string>()),
                                      config.at("name").get<std::string>());
}

std::shared_ptr<Layer> InputLayer::move_to_heap() && { return std::make_shared<InputLayer>(std::move(*this)); }

Tensor Input(const Shape& shape, DType dtype, std::string name) {
  auto layer = std::make_shared<InputLayer>(shape, dtype, std::move(name));
  Shape batched{0};
  for (int64_t d : shape) batched.push_back(d);
  Tensor placeholder = Tensor::empty(batched, dtype);
  auto node = std::make_shared<Node>();
  node->layer = layer.get();
  node->owner = layer;
  node->output_structure = Tree(Tensor::empty(batched, dtype));
  placeholder.impl()->keras_history = std::make_shared<SymbolicOrigin>(SymbolicOrigin{node, 0});
  layer->build_from(Tree(placeholder));
  return placeholder;
}

}  // namespace chorus::layers
