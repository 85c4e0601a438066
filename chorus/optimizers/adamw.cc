#include "chorus/optimizers/adamw.h"

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

}  // namespace chorus::optimizers
