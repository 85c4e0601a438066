#include "chorus/layers/reshape.h"

#include <algorithm>

#include "chorus/layers/layer_util.h"
#include "chorus/ops/shape_ops.h"

namespace chorus::layers {
namespace {

std::string tuple_string(const std::vector<int64_t>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + (dims.size() == 1 ? ",)" : ")");
}

}  // namespace

Reshape::Reshape(std::vector<int64_t> target_shape, ReshapeOptions options)
    : Layer("Reshape", std::move(options.name)), target_shape_(std::move(target_shape)) {
  const auto unknown = std::count(target_shape_.begin(), target_shape_.end(), -1);
  const bool bad_dim =
      std::any_of(target_shape_.begin(), target_shape_.end(), [](int64_t d) { return d <= 0 && d != -1; });
  if (unknown > 1 || bad_dim) {
    throw_error<ValueError>(
        "Reshape: expected target_shape with positive dimensions and at most one -1. Received: target_shape={}",
        tuple_string(target_shape_));
  }
  if (target_shape_.size() + 1 > static_cast<size_t>(kMaxRank)) {
    throw_error<ValueError>("Reshape: expected target_shape of at most {} dimensions. Received: target_shape={}",
                            kMaxRank - 1, tuple_string(target_shape_));
  }
  set_input_spec(InputSpec{.min_ndim = 1});  // a batch axis
}

Tree Reshape::call(const Tree& inputs, bool /*training*/) {
  const Tensor& x = detail::single_input(inputs, name());  // rank >= 1: input_spec()
  int64_t per_example = 1;
  for (int i = 1; i < x.rank(); ++i) per_example *= x.shape()[i];
  int64_t known = 1;
  for (int64_t d : target_shape_) known *= d == -1 ? 1 : d;
  // The output shape is resolved here, not by ops::reshape, so that a 0-row batch (whose
  // -1 could not be inferred from 0 elements) works too.
  std::vector<int64_t> shape{x.dim(0)};
  bool fits = true;
  for (int64_t d : target_shape_) {
    if (d == -1) {
      fits = known > 0 && per_example % known == 0;
      d = fits ? per_example / known : 0;
    }
    shape.push_back(d);
  }
  if (std::find(target_shape_.begin(), target_shape_.end(), -1) == target_shape_.end()) fits = known == per_example;
  if (!fits) {
    throw_error<ShapeError>("{}: cannot reshape inputs of shape {} ({} elements per example) into {}", name(),
                            x.shape().to_string(), per_example, detail::batch_shape_string(target_shape_));
  }
  return ops::reshape(x, shape);
}

nlohmann::json Reshape::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["target_shape"] = target_shape_;
  return config;
}

std::shared_ptr<Reshape> Reshape::from_config(const nlohmann::json& config) {
  ConfigReader r("Reshape", config);
  r.require({"target_shape"});
  auto layer = std::make_shared<Reshape>(r.value<std::vector<int64_t>>("target_shape", {}),
                                         ReshapeOptions{.name = detail::config_name(r)});
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
