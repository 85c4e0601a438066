#include "chorus/layers/activation.h"

#include "chorus/layers/layer_util.h"

namespace chorus::layers {

Activation::Activation(activations::Activation activation, ActivationOptions options)
    : Layer("Activation", std::move(options.name)), activation_(std::move(activation)) {}

Tree Activation::call(const Tree& inputs, bool /*training*/) {
  const Tensor& x = detail::single_input(inputs, name());
  return activation_.is_linear() ? detail::identity(x) : activation_(x);
}

nlohmann::json Activation::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["activation"] = activation_.get_config();
  return config;
}

std::shared_ptr<Activation> Activation::from_config(const nlohmann::json& config) {
  ConfigReader r("Activation", config);
  const nlohmann::json* activation = r.find("activation");
  auto layer = std::make_shared<Activation>(
      activations::Activation::from_config(activation == nullptr ? nlohmann::json(nullptr) : *activation),
      ActivationOptions{.name = detail::config_name(r)});
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
