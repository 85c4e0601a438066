// Optimizer::from_name and Optimizer::from_config: the registry of built-in optimizers.
// Configs are read strictly (an unknown key is an error), with Keras's defaults for keys
// that are absent, so a config written by Keras's get_config() loads too.

#include <algorithm>
#include <cctype>
#include <string>

#include "chorus/core/error.h"
#include "chorus/core/registry.h"
#include "chorus/optimizers/adagrad.h"
#include "chorus/optimizers/adam.h"
#include "chorus/optimizers/adamw.h"
#include "chorus/optimizers/base_options.h"
#include "chorus/core/config_reader.h"
#include "chorus/optimizers/optimizer.h"
#include "chorus/optimizers/rmsprop.h"
#include "chorus/optimizers/sgd.h"

namespace chorus::optimizers {
namespace {

using nlohmann::json;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::shared_ptr<Optimizer> sgd_from_config(const json& config) {
  return optimizer_from_config<SGD>("SGD", config, [](ConfigReader& r) {
    return SGDOptions{.momentum = r.number("momentum", 0.0), .nesterov = r.boolean("nesterov", false)};
  });
}

// Adam's own keys; AdamW's are the same (Keras's AdamW is Adam with weight decay).
template <class Options>
Options adam_options(ConfigReader& r) {
  return Options{.beta_1 = r.number("beta_1", 0.9),
                 .beta_2 = r.number("beta_2", 0.999),
                 .epsilon = r.number("epsilon", 1e-7),
                 .amsgrad = r.boolean("amsgrad", false)};
}

std::shared_ptr<Optimizer> adam_from_config(const json& config) {
  return optimizer_from_config<Adam>("Adam", config, adam_options<AdamOptions>);
}

std::shared_ptr<Optimizer> adamw_from_config(const json& config) {
  return optimizer_from_config<AdamW>("AdamW", config, [](ConfigReader& r) {
    // AdamW's weight decay is a number with a default, not an optional setting.
    if (const json* decay = r.find("weight_decay"); decay != nullptr && decay->is_null()) {
      throw_error<ValueError>("AdamW: expected weight_decay to be a number, got null");
    }
    return adam_options<AdamWOptions>(r);
  });
}

std::shared_ptr<Optimizer> adagrad_from_config(const json& config) {
  return optimizer_from_config<Adagrad>("Adagrad", config, [](ConfigReader& r) {
    return AdagradOptions{.initial_accumulator_value = r.number("initial_accumulator_value", 0.1),
                          .epsilon = r.number("epsilon", 1e-7)};
  });
}

std::shared_ptr<Optimizer> rmsprop_from_config(const json& config) {
  return optimizer_from_config<RMSprop>("RMSprop", config, [](ConfigReader& r) {
    return RMSpropOptions{.rho = r.number("rho", 0.9),
                          .momentum = r.number("momentum", 0.0),
                          .epsilon = r.number("epsilon", 1e-7),
                          .centered = r.boolean("centered", false)};
  });
}

Registry<Optimizer>& registry() {
  static Registry<Optimizer> instance("optimizer", {
      {"SGD", sgd_from_config},
      {"Adam", adam_from_config},
      {"AdamW", adamw_from_config},
      {"Adagrad", adagrad_from_config},
      {"RMSprop", rmsprop_from_config},
  });
  return instance;
}

}  // namespace

std::shared_ptr<Optimizer> Optimizer::from_name(std::string_view name) {
  // Keras's lookup knows both the class names and their lower-case aliases.
  struct Alias {
    std::string_view name;
    std::shared_ptr<Optimizer> (*make)();
  };
  static constexpr Alias kAliases[] = {
      {"sgd", []() -> std::shared_ptr<Optimizer> { return std::make_shared<SGD>(); }},
      {"adam", []() -> std::shared_ptr<Optimizer> { return std::make_shared<Adam>(); }},
      {"adamw", []() -> std::shared_ptr<Optimizer> { return std::make_shared<AdamW>(); }},
      {"adagrad", []() -> std::shared_ptr<Optimizer> { return std::make_shared<Adagrad>(); }},
      {"rmsprop", []() -> std::shared_ptr<Optimizer> { return std::make_shared<RMSprop>(); }},
  };
  const std::string key = lower(name);
  for (const Alias& alias : kAliases) {
    if (alias.name == key) return alias.make();
  }
  // A class registered by the user, by its class name, with its defaults.
  const std::string class_name(name);
  if (registry().contains(class_name)) return registry().make("Optimizer::from_name", class_name, json::object());
  std::string known;
  for (const Alias& alias : kAliases) known += (known.empty() ? "" : ", ") + std::string(alias.name);
  for (const std::string& registered : registry().names()) {
    const bool builtin = std::any_of(std::begin(kAliases), std::end(kAliases),
                                     [&](const Alias& alias) { return alias.name == lower(registered); });
    if (!builtin) known += ", " + registered;
  }
  throw_error<ValueError>("unknown optimizer '{}': expected one of {}", name, known);
}

std::shared_ptr<Optimizer> Optimizer::from_config(const json& config) {
  return registry().from_config("Optimizer::from_config", config);
}

void register_optimizer(std::string class_name, Registry<Optimizer>::Factory factory) {
  registry().add("register_optimizer", std::move(class_name), std::move(factory));
}

std::vector<std::string> registered_optimizers() { return registry().names(); }

}  // namespace chorus::optimizers
