// Small helpers the built-in layers share: unpacking a single-tensor input with an error
// that names the layer, reading config values, and restoring the base fields (name,
// trainable) in from_config. Internal to chorus/layers; stateless and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chorus/core/tree.h"
#include "chorus/layers/layer.h"
#include "chorus/ops/shape_ops.h"

namespace chorus::layers::detail {

// The one tensor of a single-input layer's inputs. Throws ValueError naming `layer`
// when `inputs` is a list or dict: "dense: expected a single tensor as input, got [...]".
inline const Tensor& single_input(const Tree& inputs, const std::string& layer) {
  if (!inputs.is_tensor()) {
    throw_error<ValueError>("{}: expected a single tensor as input, got {}", layer, inputs.to_string());
  }
  return inputs.tensor();
}

// x itself as a fresh handle (a recorded reshape view, so gradients flow): what an
// identity layer returns instead of its input's own handle.
inline Tensor identity(const Tensor& x) { return ops::reshape(x, x.shape().to_vector()); }

// The leaves of a merge layer's list input (Concatenate, Add). Throws ValueError naming
// `layer` unless `inputs` is a non-empty list of tensors.
inline std::vector<Tensor> list_inputs(const Tree& inputs, const std::string& layer) {
  if (!inputs.is_list() || inputs.size() == 0) {
    throw_error<ValueError>("{}: expected a list of at least 1 tensor as input, got {}", layer,
                            inputs.empty() ? std::string("nothing") : inputs.to_string());
  }
  std::vector<Tensor> tensors;
  for (const Tree& item : inputs.list()) {
    if (!item.is_tensor()) {
      throw_error<ValueError>("{}: expected a list of tensors as input, got {}", layer, inputs.to_string());
    }
    tensors.push_back(item.tensor());
  }
  return tensors;
}

// "(None, 3, 4)": a shape whose first (batch) axis is unknown, as Keras prints it.
inline std::string batch_shape_string(const std::vector<int64_t>& rest) {
  std::string out = "(None";
  for (int64_t d : rest) out += ", " + std::to_string(d);
  return out + ")";
}

// config[key] as T, or `fallback` when the key is absent or null. Throws ValueError
// naming the class and key when the value has the wrong JSON type.
template <class T>
T config_value(const nlohmann::json& config, const char* class_name, const char* key, T fallback) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw_error<ValueError>("{}.from_config: unexpected value for '{}': {}", class_name, key, it->dump());
  }
}

// The "name" a config carries ("" when absent: an automatic name).
inline std::string config_name(const nlohmann::json& config) {
  return config_value<std::string>(config, "Layer", "name", "");
}

// Applies the base fields Layer::get_config writes that a constructor does not take.
inline void apply_base_config(Layer& layer, const nlohmann::json& config) {
  layer.set_trainable(config_value<bool>(config, layer.class_name().c_str(), "trainable", true));
}

}  // namespace chorus::layers::detail
