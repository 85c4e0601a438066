#include "chorus/layers/concatenate.h"

#include "chorus/layers/layer_util.h"
#include "chorus/ops/shape_ops.h"

namespace chorus::layers {

Concatenate::Concatenate(ConcatenateOptions options)
    : Layer("Concatenate", options.name), options_(std::move(options)) {}

Tree Concatenate::call(const Tree& inputs, bool /*training*/) {
  const std::vector<Tensor> xs = detail::list_inputs(inputs, name());
  const Shape& first = xs[0].shape();
  if (options_.axis < -first.rank() || options_.axis >= first.rank()) {
    throw_error<IndexError>("{}: axis {} is out of range for inputs of shape {}", name(), options_.axis,
                            first.to_string());
  }
  const int axis = options_.axis < 0 ? options_.axis + first.rank() : options_.axis;
  for (size_t k = 1; k < xs.size(); ++k) {
    const Shape& shape = xs[k].shape();
    bool matches = shape.rank() == first.rank();
    for (int i = 0; matches && i < first.rank(); ++i) matches = i == axis || shape[i] == first[i];
    if (!matches) {
      throw_error<ShapeError>("{}: expected inputs with matching shapes except on axis {}, got shapes {} and {}",
                              name(), options_.axis, first.to_string(), shape.to_string());
    }
  }
  return ops::concatenate(xs, axis);
}

nlohmann::json Concatenate::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["axis"] = options_.axis;
  return config;
}

std::shared_ptr<Concatenate> Concatenate::from_config(const nlohmann::json& config) {
  ConfigReader r("Concatenate", config);
  auto layer = std::make_shared<Concatenate>(
      ConcatenateOptions{.axis = r.value<int>("axis", -1), .name = detail::config_name(r)});
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
