#include "chorus/layers/layer_normalization.h"

#include <algorithm>

#include "chorus/layers/layer_util.h"
#include "chorus/ops/ops.h"

namespace chorus::layers {

LayerNormalization::LayerNormalization(LayerNormalizationOptions options)
    : Layer("LayerNormalization", options.name), options_(std::move(options)) {
  set_autocast(false);  // computes in float32 whatever the policy; returns the input's dtype
  if (options_.axis.empty())
    throw_error<ValueError>("LayerNormalization: expected at least one axis. Received: axis=[]");
  if (!(options_.epsilon >= 0)) {
    throw_error<ValueError>("LayerNormalization: expected epsilon >= 0. Received: epsilon={}", options_.epsilon);
  }
}

std::vector<int> LayerNormalization::resolve_axes(const Shape& shape) const {
  std::vector<int> axes;
  for (int axis : options_.axis) {
    if (axis < -shape.rank() || axis >= shape.rank()) {
      throw_error<IndexError>("{}: axis {} is out of range for inputs of shape {}", name(), axis, shape.to_string());
    }
    axes.push_back(axis < 0 ? axis + shape.rank() : axis);
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    throw_error<ValueError>("{}: duplicate axes are not allowed, got axis {} for inputs of rank {}", name(),
                            nlohmann::json(options_.axis).dump(), shape.rank());
  }
  return axes;
}

void LayerNormalization::build(const Tree& inputs) {
  const Tensor& x = detail::single_input(inputs, name());
  axes_ = resolve_axes(x.shape());
  rank_ = x.rank();
  for (int axis : axes_) weight_shape_.push_back(x.shape()[axis]);
  InputSpec spec{.ndim = rank_};  // later inputs: this rank, these sizes on `axis`
  for (int axis : options_.axis) spec.axes[axis] = x.dim(axis);
  set_input_spec(std::move(spec));
  if (options_.scale) gamma_ = add_weight("gamma", weight_shape_, options_.gamma_initializer);
  if (options_.center) beta_ = add_weight("beta", weight_shape_, options_.beta_initializer);
}

Tree LayerNormalization::call(const Tree& inputs, bool /*training*/) {
  const Tensor& input = detail::single_input(inputs, name());  // rank and dims on axes_: input_spec()
  const Tensor x = input.dtype() == kFloat32 ? input : ops::cast(input, kFloat32);
  // The weights, shaped to broadcast: dims on axes_, 1 elsewhere.
  std::vector<int64_t> broadcast_shape(static_cast<size_t>(rank_), 1);
  for (size_t i = 0; i < axes_.size(); ++i) broadcast_shape[axes_[i]] = weight_shape_[static_cast<int>(i)];
  const ops::Axes axes(axes_);
  const Tensor mean = ops::mean(x, axes, /*keepdims=*/true);
  const Tensor centered = x - mean;
  const Tensor variance = ops::mean(ops::square(centered), axes, /*keepdims=*/true);
  Tensor y = centered * ops::rsqrt(variance + options_.epsilon);
  if (gamma_.defined()) y = y * ops::reshape(gamma_.value(), broadcast_shape);
  if (beta_.defined()) y = y + ops::reshape(beta_.value(), broadcast_shape);
  return input.dtype() == kFloat32 ? y : ops::cast(y, input.dtype());
}

nlohmann::json LayerNormalization::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["axis"] = options_.axis.size() == 1 ? nlohmann::json(options_.axis[0]) : nlohmann::json(options_.axis);
  config["epsilon"] = options_.epsilon;
  config["center"] = options_.center;
  config["scale"] = options_.scale;
  config["beta_initializer"] = options_.beta_initializer.get_config();
  config["gamma_initializer"] = options_.gamma_initializer.get_config();
  return config;
}

std::shared_ptr<LayerNormalization> LayerNormalization::from_config(const nlohmann::json& config) {
  ConfigReader r("LayerNormalization", config);
  LayerNormalizationOptions options;
  if (const nlohmann::json* axis = r.find("axis"); axis != nullptr && !axis->is_null()) {
    options.axis = axis->is_array() ? r.value<std::vector<int>>("axis", {}) : std::vector<int>{r.value<int>("axis", -1)};
  }
  options.epsilon = r.number("epsilon", 1e-3);
  options.center = r.boolean("center", true);
  options.scale = r.boolean("scale", true);
  detail::read_initializer(r, "beta_initializer", options.beta_initializer);
  detail::read_initializer(r, "gamma_initializer", options.gamma_initializer);
  r.accept_inert({"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"});
  r.accept_inert({"rms_scaling"}, false);
  options.name = detail::config_name(r);
  auto layer = std::make_shared<LayerNormalization>(std::move(options));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
