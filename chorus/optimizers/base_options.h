// Internal to the optimizers: the OptimizerOptions part of an optimizer's options struct.
// Each struct repeats the four base fields (weight_decay, clipnorm, clipvalue,
// global_clipnorm) after its own, because designated initializers cannot name the
// fields of a base class: `Adam({.learning_rate = 1e-3, .global_clipnorm = 1.0})`.
#pragma once

#include "chorus/optimizers/optimizer.h"

namespace chorus::optimizers {

template <class Options>
OptimizerOptions base_options(const Options& options) {
  return OptimizerOptions{.weight_decay = options.weight_decay,
                          .clipnorm = options.clipnorm,
                          .clipvalue = options.clipvalue,
                          .global_clipnorm = options.global_clipnorm};
}

}  // namespace chorus::optimizers
