#include "chorus/optimizers/adamw.h"

#include "chorus/core/error.h"
#include "chorus/optimizers/base_options.h"
#include "chorus/optimizers/own_settings.h"

namespace chorus::optimizers {

AdamW::AdamW(AdamWOptions options)
    : Adam("AdamW", "adamw",
           AdamOptions{.learning_rate = std::move(options.learning_rate),
                       .beta_1 = options.beta_1,
                       .beta_2 = options.beta_2,
                       .epsilon = options.epsilon,
                       .amsgrad = options.amsgrad,
                       .weight_decay = options.weight_decay,
                       .clipnorm = options.clipnorm,
                       .clipvalue = options.clipvalue,
                       .global_clipnorm = options.global_clipnorm}) {}

std::shared_ptr<Optimizer> adamw_from_config(const nlohmann::json& config) {
  return optimizer_from_config<AdamW>("AdamW", config, [](ConfigReader& r) {
    // AdamW's weight decay is a number with a default, not an optional setting.
    if (const nlohmann::json* decay = r.find("weight_decay"); decay != nullptr && decay->is_null()) {
      throw_error<ValueError>("AdamW: expected weight_decay to be a number, got null");
    }
    return read_own_settings(r, kAdamSettings<AdamWOptions>);
  });
}

}  // namespace chorus::optimizers
