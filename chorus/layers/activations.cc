// Activations composed from chorus ops (keras/src/activations/activations.py), and the
// name table behind get() and Activation.
#include "chorus/layers/activations.h"

#include <map>

#include "chorus/core/creation.h"
#include "chorus/ops/ops.h"

namespace chorus::activations {
namespace {

Tensor constant_like(const Tensor& x, double value) { return scalar(value, x.dtype()); }

struct Entry {
  Function function;
  std::string canonical;  // the name Keras serialises
};

const std::map<std::string, Entry, std::less<>>& table() {
  static const std::map<std::string, Entry, std::less<>> entries = [] {
    std::map<std::string, Entry, std::less<>> t;
    auto add = [&t](const std::string& name, Function f) { t[name] = Entry{std::move(f), name}; };
    add("linear", linear);
    add("relu", relu);
    add("relu6", relu6);
    add("leaky_relu", [](const Tensor& x) { return leaky_relu(x); });
    add("sigmoid", sigmoid);
    add("tanh", activations::tanh);
    add("softmax", [](const Tensor& x) { return softmax(x); });
    add("log_softmax", [](const Tensor& x) { return log_softmax(x); });
    add("gelu", [](const Tensor& x) { return gelu(x); });
    // KerasHub's keras_hub>gelu_approximate (BERT's feedforward activation).
    add("gelu_approximate", [](const Tensor& x) { return gelu(x, /*approximate=*/true); });
    add("softplus", softplus);
    add("softsign", softsign);
    add("silu", silu);
    add("elu", [](const Tensor& x) { return elu(x); });
    add("selu", selu);
    add("exponential", exponential);
    add("hard_sigmoid", hard_sigmoid);
    add("hard_silu", hard_silu);
    add("mish", mish);
    add("log_sigmoid", log_sigmoid);
    t["swish"] = Entry{silu, "silu"};
    t["hard_swish"] = Entry{hard_silu, "hard_silu"};
    return t;
  }();
  return entries;
}

const Entry& lookup(std::string_view name) {
  auto it = table().find(name);
  if (it == table().end()) {
    std::string known;
    for (const std::string& n : names()) known += (known.empty() ? "" : ", ") + n;
    throw_error<ValueError>("Unknown activation '{}'. Expected one of: {}", name, known);
  }
  return it->second;
}

}  // namespace

Tensor linear(const Tensor& x) { return ops::reshape(x, x.shape().to_vector()); }
Tensor relu(const Tensor& x) { return ops::relu(x); }
Tensor relu6(const Tensor& x) { return ops::clip(x, 0.0, 6.0); }

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return ops::where(ops::greater_equal(x, constant_like(x, 0)), x, x * negative_slope);
}

Tensor sigmoid(const Tensor& x) { return ops::sigmoid(x); }
Tensor tanh(const Tensor& x) { return ops::tanh(x); }
Tensor softmax(const Tensor& x, int axis) { return ops::softmax(x, axis); }
Tensor log_softmax(const Tensor& x, int axis) { return ops::log_softmax(x, axis); }
Tensor gelu(const Tensor& x, bool approximate) { return ops::gelu(x, approximate); }
Tensor softplus(const Tensor& x) { return ops::softplus(x); }
Tensor softsign(const Tensor& x) { return x / (ops::abs(x) + 1.0); }
Tensor silu(const Tensor& x) { return x * ops::sigmoid(x); }

Tensor elu(const Tensor& x, double alpha) {
  // exp of min(x, 0), not of x: the unselected branch must stay finite, or its gradient
  // (0 * inf) would be NaN where x is large.
  const Tensor zero = constant_like(x, 0);
  const Tensor negative_part = (ops::exp(ops::minimum(x, zero)) - 1.0) * alpha;
  return ops::where(ops::greater(x, zero), x, negative_part);
}

Tensor selu(const Tensor& x) {
  constexpr double kAlpha = 1.67326324, kScale = 1.05070098;
  return elu(x, kAlpha) * kScale;
}

Tensor exponential(const Tensor& x) { return ops::exp(x); }
Tensor hard_sigmoid(const Tensor& x) { return relu6(x + 3.0) / 6.0; }
Tensor hard_silu(const Tensor& x) { return x * hard_sigmoid(x); }
Tensor mish(const Tensor& x) { return x * ops::tanh(ops::softplus(x)); }
Tensor log_sigmoid(const Tensor& x) { return -ops::softplus(-x); }

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const auto& [name, entry] : table()) out.push_back(name);
  return out;
}

Function get(std::string_view name) { return lookup(name).function; }

Activation::Activation(std::string_view name) {
  const Entry& entry = lookup(name);
  function_ = entry.function;
  name_ = entry.canonical;
}

Activation::Activation(Function function, std::string name) : function_(std::move(function)), name_(std::move(name)) {
  if (!function_) throw_error<ValueError>("Activation '{}': expected a callable, got an empty function", name_);
}

Activation Activation::from_config(const nlohmann::json& config) {
  if (config.is_null()) return Activation();
  if (!config.is_string()) {
    throw_error<ValueError>("Activation: expected an activation name or null. Received: {}", config.dump());
  }
  return Activation(config.get<std::string>());
}

}  // namespace chorus::activations
