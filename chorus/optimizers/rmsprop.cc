#include "chorus/optimizers/rmsprop.h"

#include "chorus/optimizers/base_options.h"
#include "chorus/optimizers/update_kernels.h"

namespace chorus::optimizers {

RMSprop::RMSprop(RMSpropOptions options)
    : Optimizer("RMSprop", "rmsprop", std::move(options.learning_rate), base_options(options)),
      rho_(options.rho),
      momentum_(options.momentum),
      epsilon_(options.epsilon),
      centered_(options.centered) {}

void RMSprop::build_slots(const Variable& variable) {
  add_slot(variable, "velocity", 0.0);
  if (momentum_ > 0) add_slot(variable, "momentum", 0.0);
  if (centered_) add_slot(variable, "average_gradient", 0.0);
}

void RMSprop::update_step(const Tensor& grad, const Variable& variable, size_t slot_index, double lr,
                          int64_t /*step*/) {
  const std::vector<Variable>& s = slots(slot_index);
  const bool momentum = momentum_ > 0;
  const kernels::RmspropArgs args{
      .var = variable.value().data<float>(),
      .velocity = s[0].value().data<float>(),
      .momentum = momentum ? s[1].value().data<float>() : nullptr,
      .average_gradient = centered_ ? s[momentum ? 2 : 1].value().data<float>() : nullptr,
      .grad = grad.data<float>(),
      .lr = static_cast<float>(lr),
      .rho = static_cast<float>(rho_),
      .one_minus_rho = static_cast<float>(1 - rho_),
      .momentum_rate = static_cast<float>(momentum_),
      .epsilon = static_cast<float>(epsilon_),
  };
  kernels::rmsprop(args, grad.numel());
}

nlohmann::json RMSprop::get_config() const {
  nlohmann::json config = Optimizer::get_config();
  config["rho"] = rho_;
  config["momentum"] = momentum_;
  config["epsilon"] = epsilon_;
  config["centered"] = centered_;
  return config;
}

}  // namespace chorus::optimizers
