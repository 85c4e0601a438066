#include "chorus/optimizers/adam.h"

#include <cmath>

#include "chorus/optimizers/base_options.h"
#include "chorus/optimizers/update_kernels.h"

namespace chorus::optimizers {

Adam::Adam(std::string class_name, std::string name, AdamOptions options)
    : Optimizer(std::move(class_name), std::move(name), std::move(options.learning_rate), base_options(options)),
      beta_1_(options.beta_1),
      beta_2_(options.beta_2),
      epsilon_(options.epsilon),
      amsgrad_(options.amsgrad) {}

void Adam::build_slots(const Variable& variable) {
  add_slot(variable, "momentum", 0.0);
  add_slot(variable, "velocity", 0.0);
  if (amsgrad_) add_slot(variable, "velocity_hat", 0.0);
}

void Adam::update_step(const Tensor& grad, const Variable& variable, size_t slot_index, double lr, int64_t step) {
  const std::vector<Variable>& s = slots(slot_index);
  // The bias corrections of m and v, folded into one step size (computed in double).
  const double t = static_cast<double>(step);
  const double alpha = lr * std::sqrt(1 - std::pow(beta_2_, t)) / (1 - std::pow(beta_1_, t));
  const kernels::AdamArgs args{
      .var = variable.value().data<float>(),
      .m = s[0].value().data<float>(),
      .v = s[1].value().data<float>(),
      .v_hat = amsgrad_ ? s[2].value().data<float>() : nullptr,
      .grad = grad.data<float>(),
      .one_minus_beta_1 = static_cast<float>(1 - beta_1_),
      .one_minus_beta_2 = static_cast<float>(1 - beta_2_),
      .alpha = static_cast<float>(alpha),
      .epsilon = static_cast<float>(epsilon_),
  };
  kernels::adam(args, grad.numel());
}

nlohmann::json Adam::get_config() const {
  nlohmann::json config = Optimizer::get_config();
  config["beta_1"] = beta_1_;
  config["beta_2"] = beta_2_;
  config["epsilon"] = epsilon_;
  config["amsgrad"] = amsgrad_;
  return config;
}

}  // namespace chorus::optimizers
