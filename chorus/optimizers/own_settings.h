// Internal to the optimizers: an optimizer's own settings (beside the base keys) as Keras's
// config keys over the fields of its options struct — one table (beside the class) that
// its get_config writes from and its from_config reads into, so each key is named once
// and each default is the struct's. Stateless and thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <variant>

#include <nlohmann/json.hpp>

#include "chorus/core/config_reader.h"
#include "chorus/optimizers/optimizer.h"

namespace chorus::optimizers {

// One setting: a number or a flag of the options struct, under its config key.
template <class Options>
struct OwnSetting {
  const char* key;
  std::variant<double Options::*, bool Options::*> field;
};

// Adam's (AdamOptions); AdamW's are the same (Keras's AdamW is Adam with weight decay).
template <class Options>
inline constexpr OwnSetting<Options> kAdamSettings[] = {
    {"beta_1", &Options::beta_1},
    {"beta_2", &Options::beta_2},
    {"epsilon", &Options::epsilon},
    {"amsgrad", &Options::amsgrad},
};

// Sets config[key] to each setting's value in `options`.
template <class Options, size_t N>
void write_own_settings(const Options& options, const OwnSetting<Options> (&settings)[N], nlohmann::json& config) {
  for (const OwnSetting<Options>& setting : settings) {
    std::visit([&](auto field) { config[setting.key] = options.*field; }, setting.field);
  }
}

// Options with each setting read from the config in the table's order (Options' default
// where the key is absent); the learning rate and the base keys are left to the caller.
template <class Options, size_t N>
Options read_own_settings(ConfigReader& reader, const OwnSetting<Options> (&settings)[N]) {
  Options options;
  for (const OwnSetting<Options>& setting : settings) {
    std::visit(
        [&](auto field) {
          if constexpr (std::is_same_v<decltype(field), bool Options::*>) {
            options.*field = reader.boolean(setting.key, options.*field);
          } else {
            options.*field = reader.number(setting.key, options.*field);
          }
        },
        setting.field);
  }
  return options;
}

// Each built-in optimizer's from_config (Optimizer::from_config's registry), defined beside
// its class and its settings: the config of its get_config() back into an optimizer.
std::shared_ptr<Optimizer> sgd_from_config(const nlohmann::json& config);
std::shared_ptr<Optimizer> adam_from_config(const nlohmann::json& config);
std::shared_ptr<Optimizer> adamw_from_config(const nlohmann::json& config);
std::shared_ptr<Optimizer> adagrad_from_config(const nlohmann::json& config);
std::shared_ptr<Optimizer> rmsprop_from_config(const nlohmann::json& config);

}  // namespace chorus::optimizers
