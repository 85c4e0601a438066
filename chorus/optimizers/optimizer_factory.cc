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
#include "chorus/optimizers/config_reader.h"
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
  ConfigReader r("SGD", config);
  r.string("name", "");
  const OptimizerOptions base = r.optimizer_options();
  auto out = std::make_shared<SGD>(SGDOptions{.learning_rate = r.learning_rate("learning_rate", 0.01),
                                              .momentum = r.number("momentum", 0.0),
                                              .nesterov = r.boolean("nesterov", false),
                                              .weight_decay = base.weight_decay,
                                              .clipnorm = base.clipnorm,
                                              .clipvalue = base.clipvalue,
                                              .global_clipnorm = base.global_clipnorm});
  r.finish();
  return out;
}

// Adam's keys; AdamW's are the same (Keras's AdamW is Adam with weight decay).
AdamOptions adam_options(ConfigReader& r) {
  r.string("name", "");
  const OptimizerOptions base = r.optimizer_options();
  return AdamOptions{.learning_rate = r.learning_rate("learning_rate", 0.001),
                     .beta_1 = r.number("beta_1", 0.9),
                     .beta_2 = r.number("beta_2", 0.999),
                     .epsilon = r.number("epsilon", 1e-7),
                     .amsgrad = r.boolean("amsgrad", false),
                     .weight_decay = base.weight_decay,
                     .clipnorm = base.clipnorm,
                     .clipvalue = base.clipvalue,
                     .global_clipnorm = base.global_clipnorm};
}

std::shared_ptr<Optimizer> adam_from_config(const json& config) {
  ConfigReader r("Adam", config);
  auto out = std::make_shared<Adam>(adam_options(r));
  r.finish();
  return out;
}

std::shared_ptr<Optimizer> adamw_from_config(const json& config) {
  ConfigReader r("AdamW", config);
  AdamOptions o = adam_options(r);
  r.finish();
  if (config.contains("weight_decay") && !o.weight_decay) {
    throw_error<ValueError>("AdamW: expected weight_decay to be a number, got null");
  }
  return std::make_shared<AdamW>(AdamWOptions{.learning_rate = std::move(o.learning_rate),
                                              .weight_decay = o.weight_decay.value_or(0.004),
                                              .beta_1 = o.beta_1,
                                              .beta_2 = o.beta_2,
                                              .epsilon = o.epsilon,
                                              .amsgrad = o.amsgrad,
                                              .clipnorm = o.clipnorm,
                                              .clipvalue = o.clipvalue,
                                              .global_clipnorm = o.global_clipnorm});
}

std::shared_ptr<Optimizer> adagrad_from_config(const json& config) {
  ConfigReader r("Adagrad", config);
  r.string("name", "");
  const OptimizerOptions base = r.optimizer_options();
  auto out = std::make_shared<Adagrad>(
      AdagradOptions{.learning_rate = r.learning_rate("learning_rate", 0.001),
                     .initial_accumulator_value = r.number("initial_accumulator_value", 0.1),
                     .epsilon = r.number("epsilon", 1e-7),
                     .weight_decay = base.weight_decay,
                     .clipnorm = base.clipnorm,
                     .clipvalue = base.clipvalue,
                     .global_clipnorm = base.global_clipnorm});
  r.finish();
  return out;
}

std::shared_ptr<Optimizer> rmsprop_from_config(const json& config) {
  ConfigReader r("RMSprop", config);
  r.string("name", "");
  const OptimizerOptions base = r.optimizer_options();
  auto out = std::make_shared<RMSprop>(RMSpropOptions{.learning_rate = r.learning_rate("learning_rate", 0.001),
                                                      .rho = r.number("rho", 0.9),
                                                      .momentum = r.number("momentum", 0.0),
                                                      .epsilon = r.number("epsilon", 1e-7),
                                                      .centered = r.boolean("centered", false),
                                                      .weight_decay = base.weight_decay,
                                                      .clipnorm = base.clipnorm,
                                                      .clipvalue = base.clipvalue,
                                                      .global_clipnorm = base.global_clipnorm});
  r.finish();
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
  ConfigReader outer("Optimizer::from_config", config);
  outer.require({"class_name", "config"});
  const std::string class_name = outer.string("class_name", "");
  outer.string("module", "");
  outer.string("registered_name", "");
  const json& inner = outer.raw("config");
  outer.finish();
  return registry().make("Optimizer::from_config", class_name, inner);
}

void register_optimizer(std::string class_name, Registry<Optimizer>::Factory factory) {
  registry().add("register_optimizer", std::move(class_name), std::move(factory));
}

}  // namespace chorus::optimizers
