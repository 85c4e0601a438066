#include "chorus/layers/input_layer.h"

#include <algorithm>

#include "chorus/core/error.h"
#include "chorus/layers/layer_util.h"
#include "chorus/layers/node.h"

namespace chorus::layers {
namespace {

DType dtype_from_name(const std::string& name) {
  try {
    return parse_dtype(name);
  } catch (const ValueError& e) {
    throw ValueError(std::string("InputLayer: ") + e.what());
  }
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
  ConfigReader r("InputLayer", config);
  r.require({"batch_shape", "dtype", "name"});
  // The batch dimension (first) is None; the others must be whole numbers, not 4.5.
  const std::vector<int64_t> batch_shape = detail::dims_or_null(r, "batch_shape");
  if (batch_shape.empty() || std::count(batch_shape.begin() + 1, batch_shape.end(), -1) > 0) {
    r.wrong_type("batch_shape", "[null, integers...]");
  }
  const std::vector<int64_t> dims(batch_shape.begin() + 1, batch_shape.end());
  r.accept_inert({"sparse", "ragged", "optional"}, false);
  auto layer = std::make_shared<InputLayer>(Shape(dims), dtype_from_name(r.string("dtype", "")), r.string("name", ""));
  r.finish();
  return layer;
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
