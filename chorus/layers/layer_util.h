// Small helpers the built-in layers share: unpacking a single-tensor input with an error
// that names the layer, and the config keys every layer's from_config reads (name,
// trainable, dtype) with the strict ConfigReader. Internal to chorus/layers; stateless
// and thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chorus/core/config_reader.h"
#include "chorus/core/tree.h"
#include "chorus/layers/activations.h"
#include "chorus/layers/initializers.h"
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

// The "name" a config carries ("" when absent: an automatic name).
inline std::string config_name(ConfigReader& config) { return config.string("name", ""); }

// Ends a from_config: applies the base fields Layer::get_config writes that a constructor
// does not take (trainable, dtype), accepts Keras's base activity_regularizer only unset,
// and then throws ValueError for any key no one read ("Dense: unexpected config key ...").
inline void finish_config(Layer& layer, ConfigReader& config) {
  layer.set_trainable(config.boolean("trainable", true));
  if (config.has("dtype")) layer.set_dtype_policy(mixed_precision::DTypePolicy(config.string("dtype", "")));
  config.accept_inert({"activity_regularizer"});
  config.finish();
}

// Replaces `out` with the initializer at `key` ({"class_name", "config"} or a name) when
// the config has one (null keeps the default).
inline void read_initializer(ConfigReader& config, const char* key, Initializer& out) {
  const nlohmann::json* value = config.find(key);
  if (value != nullptr && !value->is_null()) out = Initializer::from_config(*value);
}

// The keys Dense and EinsumDense share: activation, kernel and bias initializers, and
// Keras's regularizers, constraints and LoRA rank, accepted only unset.
template <class Options>
void read_dense_keys(ConfigReader& config, Options& options) {
  if (const nlohmann::json* activation = config.find("activation")) {
    options.activation = activations::Activation::from_config(*activation);
  }
  read_initializer(config, "kernel_initializer", options.kernel_initializer);
  read_initializer(config, "bias_initializer", options.bias_initializer);
  config.accept_inert({"kernel_regularizer", "bias_regularizer", "kernel_constraint", "bias_constraint", "lora_rank"});
}

// A list of dims where null stands for an unknown one (-1): a noise_shape, an output_shape.
// Throws ValueError (ConfigReader::wrong_type) for anything else.
inline std::vector<int64_t> dims_or_null(ConfigReader& config, const char* key) {
  const nlohmann::json* value = config.find(key);
  std::vector<int64_t> dims;
  if (value == nullptr || value->is_null()) return dims;
  if (!value->is_array()) config.wrong_type(key, "a list of integers or nulls");
  for (const nlohmann::json& d : *value) {
    if (!d.is_null() && !config_type_matches<int64_t>(d)) config.wrong_type(key, "a list of integers or nulls");
    dims.push_back(d.is_null() ? -1 : d.get<int64_t>());
  }
  return dims;
}

}  // namespace chorus::layers::detail
