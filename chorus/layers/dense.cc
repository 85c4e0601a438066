#include "chorus/layers/dense.h"

#include "chorus/layers/layer_util.h"
#include "chorus/ops/ops.h"

namespace chorus::layers {

Dense::Dense(int64_t units, DenseOptions options)
    : Layer("Dense", options.name), units_(units), options_(std::move(options)) {
  if (units <= 0) throw_error<ValueError>("Dense: expected units > 0. Received: units={}", units);
  set_input_spec(InputSpec{.min_ndim = 2});
}

void Dense::build(const Tree& inputs) {
  const Tensor& x = detail::single_input(inputs, name());
  set_input_spec(InputSpec{.min_ndim = 2, .axes = {{-1, x.dim(-1)}}});
  kernel_ = add_weight("kernel", Shape{x.dim(-1), units_}, options_.kernel_initializer);
  if (options_.use_bias) bias_ = add_weight("bias", Shape{units_}, options_.bias_initializer);
}

Tree Dense::call(const Tree& inputs, bool /*training*/) {
  const Tensor& x = detail::single_input(inputs, name());  // rank >= 2, last axis D: input_spec()
  // x: (B, ..., D) @ kernel: (D, U) -> (B, ..., U)
  const Tensor input = x.dtype() == kernel_.dtype() ? x : ops::cast(x, kernel_.dtype());
  Tensor y = bias_.defined() ? ops::matmul(input, kernel_.value(), bias_.value()) : ops::matmul(input, kernel_.value());
  if (!options_.activation.is_linear()) y = options_.activation(y);
  return y;
}

nlohmann::json Dense::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["units"] = units_;
  config["activation"] = options_.activation.get_config();
  config["use_bias"] = options_.use_bias;
  config["kernel_initializer"] = options_.kernel_initializer.get_config();
  config["bias_initializer"] = options_.bias_initializer.get_config();
  return config;
}

std::shared_ptr<Dense> Dense::from_config(const nlohmann::json& config) {
  ConfigReader r("Dense", config);
  r.require({"units"});
  DenseOptions options;
  detail::read_dense_keys(r, options);
  options.use_bias = r.boolean("use_bias", true);
  options.name = detail::config_name(r);
  auto layer = std::make_shared<Dense>(r.integer("units", 0), std::move(options));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
