#include "chorus/layers/flatten.h"

#include "chorus/layers/layer_util.h"
#include "chorus/ops/shape_ops.h"

namespace chorus::layers {

Flatten::Flatten(FlattenOptions options) : Layer("Flatten", std::move(options.name)) {
  set_input_spec(InputSpec{.min_ndim = 1});
}

Tree Flatten::call(const Tree& inputs, bool /*training*/) {
  const Tensor& x = detail::single_input(inputs, name());  // rank >= 1: input_spec()
  // The flattened size is computed, not inferred with -1, so a 0-row batch works.
  int64_t features = 1;
  for (int i = 1; i < x.rank(); ++i) features *= x.shape()[i];
  return ops::reshape(x, {x.dim(0), features});
}

nlohmann::json Flatten::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["data_format"] = "channels_last";
  return config;
}

std::shared_ptr<Flatten> Flatten::from_config(const nlohmann::json& config) {
  ConfigReader r("Flatten", config);
  const std::string format = r.string("data_format", "channels_last");
  if (format != "channels_last") {
    throw_error<ValueError>("Flatten: only data_format='channels_last' is supported. Received: data_format={}", format);
  }
  auto layer = std::make_shared<Flatten>(FlattenOptions{.name = detail::config_name(r)});
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
