// The layer registry: Keras class names ("Dense") -> a function that makes the layer
// from its get_config(), so models can be rebuilt from saved configs. The built-in layers
// are registered from the start; users add their own with register_layer(). Thread-safe
// (a mutex guards the table).
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chorus/layers/layer.h"

namespace chorus::layers {

using LayerFactory = std::function<std::shared_ptr<Layer>(const nlohmann::json& config)>;

// Makes `class_name` known to layer_from_config; `factory` receives the inner "config"
// object. Registering a name again replaces its factory. Throws ValueError for an empty
// name or factory.
void register_layer(std::string class_name, LayerFactory factory);

// A new layer from {"class_name": "Dense", "config": {...}} (Keras's serialised form;
// other keys such as "module" are ignored). Throws ValueError for a malformed config or
// an unknown class, naming it and listing the known ones.
std::shared_ptr<Layer> layer_from_config(const nlohmann::json& config);

// {"class_name": ..., "config": layer.get_config()}: what layer_from_config reads.
nlohmann::json serialize_layer(const Layer& layer);

// The registered class names, sorted.
std::vector<std::string> registered_layers();

}  // namespace chorus::layers
