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
#include "chorus/optimizers/optimizer.h"
#include "chorus/optimizers/own_settings.h"
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
