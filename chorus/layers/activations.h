// Keras's activation functions (keras.activations) built from chorus ops, so they are
// differentiable, and Activation: the small value type a layer's options hold for one
// (`.activation = "relu"`). Pure functions and immutable values; thread-safe.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "chorus/core/tensor.h"

namespace chorus::activations {

Tensor linear(const Tensor& x);  // the identity (a fresh handle, so autograd sees a use)
Tensor relu(const Tensor& x);
Tensor relu6(const Tensor& x);  // min(max(x, 0), 6)
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.2);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor softmax(const Tensor& x, int axis = -1);
Tensor log_softmax(const Tensor& x, int axis = -1);
// approximate=false (the exact erf form) is Keras 3's default for the activation.
Tensor gelu(const Tensor& x, bool approximate = false);
Tensor softplus(const Tensor& x);
Tensor softsign(const Tensor& x);                 // x / (1 + |x|)
Tensor silu(const Tensor& x);                     // x * sigmoid(x), also called swish
Tensor elu(const Tensor& x, double alpha = 1.0);  // x if x > 0, else alpha * (exp(x) - 1)
// scale * elu(x, alpha) with alpha = 1.67326324, scale = 1.05070098.
Tensor selu(const Tensor& x);
Tensor exponential(const Tensor& x);
Tensor hard_sigmoid(const Tensor& x);  // relu6(x + 3) / 6 (Keras 3)
Tensor hard_silu(const Tensor& x);     // x * hard_sigmoid(x), also called hard_swish
Tensor mish(const Tensor& x);          // x * tanh(softplus(x))
Tensor log_sigmoid(const Tensor& x);   // -softplus(-x)

// The Keras names get() accepts: "relu", "sigmoid", ..., with the aliases "swish" and
// "hard_swish".
std::vector<std::string> names();

using Function = std::function<Tensor(const Tensor&)>;

// The function named `name`. Throws ValueError listing names() for an unknown one.
Function get(std::string_view name);

// An activation held by value, remembering its Keras name for get_config: built from a
// name (checked at construction) or from any callable with a name of your choice.
// Default-constructed, it is "linear".
class Activation {
 public:
  Activation() : Activation("linear") {}
  Activation(std::string_view name);                                           // NOLINT: `.activation = "relu"`
  Activation(const char* name) : Activation(std::string_view(name)) {}         // NOLINT
  Activation(const std::string& name) : Activation(std::string_view(name)) {}  // NOLINT
  // A custom function; `name` is what get_config reports (a later from_config of that
  // name only works if it is a Keras name).
  Activation(Function function, std::string name);

  Tensor operator()(const Tensor& x) const { return function_(x); }
  // The canonical Keras name: "silu" for "swish", "linear" for the default.
  const std::string& name() const { return name_; }
  bool is_linear() const { return name_ == "linear"; }

  // Keras serialises a built-in activation as its name.
  nlohmann::json get_config() const { return name_; }
  // From a name, or null (Keras's None: linear). Throws ValueError otherwise.
  static Activation from_config(const nlohmann::json& config);

 private:
  Function function_;
  std::string name_;
};

}  // namespace chorus::activations
