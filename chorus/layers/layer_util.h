// Small helpers the built-in layers share: unpacking a single-tensor input with an error
// that names the layer, reading config values, and restoring the base fields (name,
// trainable) in from_config. Internal to chorus/layers; stateless and thread-safe.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
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

// Whether `value` is a JSON value of T's kind that T holds exactly: json's get<T>()
// would truncate 10.7 to an integer and wrap 2^63 or -1 into an unsigned. An integer
// field accepts an integral float (10.0), as the optimizer configs do.
template <class T>
bool config_type_matches(const nlohmann::json& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value.is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    if (value.is_number_unsigned()) return value.get<uint64_t>() <= uint64_t{std::numeric_limits<T>::max()};
    if (value.is_number_integer()) {  // a negative integer
      if constexpr (std::is_signed_v<T>) return value.get<int64_t>() >= int64_t{std::numeric_limits<T>::min()};
      return false;
    }
    if (!value.is_number_float()) return false;
    const double d = value.get<double>();
    // Below 2^63 (a double's exact bound), and within T.
    return std::floor(d) == d && d >= static_cast<double>(std::numeric_limits<T>::min()) &&
           d < std::ldexp(1.0, std::numeric_limits<T>::digits);
  } else if constexpr (std::is_floating_point_v<T>) {
    return value.is_number();
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value.is_string();
  } else {
    return true;  // other types: get<T>() checks them itself
  }
}

// What config_value expects, for its error message.
template <class T>
constexpr const char* config_type_name() {
  if constexpr (std::is_same_v<T, bool>) return "a boolean";
  else if constexpr (std::is_integral_v<T>) return std::is_signed_v<T> ? "an integer" : "a non-negative integer";
  else if constexpr (std::is_floating_point_v<T>) return "a number";
  else if constexpr (std::is_same_v<T, std::string>) return "a string";
  else return "another type";
}

// config[key] as T, or `fallback` when the key is absent or null. Throws ValueError
// naming the class, key and layer when the value has the wrong JSON type or does not
// fit T: "Dense.from_config: unexpected value for 'units': 10.7, expected an integer
// (layer 'dense_1')".
template <class T>
T config_value(const nlohmann::json& config, const char* class_name, const char* key, T fallback) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  try {
    if (config_type_matches<T>(*it)) return it->get<T>();
  } catch (const nlohmann::json::exception&) {
  }
  const auto name = config.find("name");
  const std::string layer = name != config.end() && name->is_string() ? name->get<std::string>() : "";
  throw_error<ValueError>("{}.from_config: unexpected value for '{}': {}, expected {}{}", class_name, key, it->dump(),
                          config_type_name<T>(), layer.empty() ? "" : fmt::format(" (layer '{}')", layer));
}

// The "name" a config carries ("" when absent: an automatic name).
inline std::string config_name(const nlohmann::json& config) {
  return config_value<std::string>(config, "Layer", "name", "");
}

// Applies the base fields Layer::get_config writes that a constructor does not take.
inline void apply_base_config(Layer& layer, const nlohmann::json& config) {
  layer.set_trainable(config_value<bool>(config, layer.class_name().c_str(), "trainable", true));
  if (config.contains("dtype")) {
    layer.set_dtype_policy(
        mixed_precision::DTypePolicy(config_value<std::string>(config, layer.class_name().c_str(), "dtype", "")));
  }
}

}  // namespace chorus::layers::detail
