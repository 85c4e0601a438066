// Internal to the optimizers: the OptimizerOptions part of an optimizer's options struct,
// and the one reader of the config keys every optimizer shares. Each struct repeats the
// four base fields (weight_decay, clipnorm, clipvalue, global_clipnorm) after its own,
// because designated initializers cannot name the fields of a base class:
// `Adam({.learning_rate = 1e-3, .global_clipnorm = 1.0})`. Stateless and thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "chorus/core/config_reader.h"
#include "chorus/optimizers/learning_rate.h"
#include "chorus/optimizers/optimizer.h"

namespace chorus::optimizers {

template <class Options>
OptimizerOptions base_options(const Options& options) {
  return OptimizerOptions{.weight_decay = options.weight_decay,
                          .clipnorm = options.clipnorm,
                          .clipvalue = options.clipvalue,
                          .global_clipnorm = options.global_clipnorm};
}

// The keys of Keras's base Optimizer.get_config(), as one optimizer's config holds them.
struct BaseConfig {
  std::optional<LearningRate> learning_rate;  // absent: the optimizer's default
  OptimizerOptions options;
};

// Reads name, learning_rate (a number >= 0 or a schedule's {"class_name", "config"}),
// weight_decay, clipnorm, clipvalue and global_clipnorm, and accepts Keras's keys chorus
// does not implement only at their inert values (use_ema false, loss_scale_factor null,
// ...): a config that turns one on is refused rather than trained differently.
BaseConfig read_base_config(ConfigReader& reader);

// `options` with the base config's fields set where the config had them.
template <class Options>
Options with_base_config(Options options, BaseConfig base) {
  if (base.learning_rate) options.learning_rate = std::move(*base.learning_rate);
  if constexpr (std::is_same_v<decltype(options.weight_decay), std::optional<double>>) {
    options.weight_decay = base.options.weight_decay;
  } else if (base.options.weight_decay) {  // AdamW: a plain number with its own default
    options.weight_decay = *base.options.weight_decay;
  }
  options.clipnorm = base.options.clipnorm;
  options.clipvalue = base.options.clipvalue;
  options.global_clipnorm = base.options.global_clipnorm;
  return options;
}

// An optimizer of class T from its get_config(): `read_own(reader)` returns T's options
// with T's own keys read; the base keys are read here, and any other key is an error.
template <class T, class ReadOwn>
std::shared_ptr<Optimizer> optimizer_from_config(const char* class_name, const nlohmann::json& config,
                                                 ReadOwn read_own) {
  ConfigReader reader(class_name, config);
  auto own = read_own(reader);
  auto options = with_base_config(std::move(own), read_base_config(reader));
  reader.finish();
  return std::make_shared<T>(std::move(options));
}

}  // namespace chorus::optimizers
