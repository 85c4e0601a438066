#include "chorus/optimizers/adam.h"

#include <cmath>

#include "chorus/optimizers/base_options.h"
#include "chorus/optimizers/own_settings.h"
#include "chorus/optimizers/update_kernels.h"

namespace chorus::optimizers {

Adam::Adam(std::string class_name, std::string name, AdamOptions options)
    : Optimizer(std::move(class_name), std::move(name), std::move(options.learning_rate), base_options(options)),
      options_(std::move(options)) {}

void Adam::build_slots(const Variable& variable) {
  add_slot(variable, "momentum", 0.0);
  add_slot(variable, "velocity", 0.0);
  if (options_.amsgrad) add_slot(variable, "velocity_hat", 0.0);
}

void Adam::update_step(const Tensor& grad, const Variable& variable, size_t slot_index, double lr, int64_t step) {
  const std::vector<Variable>& s = slots(slot_index);
  // The bias corrections of m and v, folded into one step size (computed in double).
  const double t = static_cast<double>(step);
  const double alpha = lr * std::sqrt(1 - std::pow(options_.beta_2, t)) / (1 - std::pow(options_.beta_1, t));
  const kernels::AdamArgs args{
      .var = variable.value().data<float>(),
      .m = s[0].value().data<float>(),
      .v = s[1].value().data<float>(),
      .v_hat = options_.amsgrad ? s[2].value().data<float>() : nullptr,
      .grad = grad.data<float>(),
      .one_minus_beta_1 = static_cast<float>(1 - options_.beta_1),
      .one_minus_beta_2 = static_cast<float>(1 - options_.beta_2),
      .alpha = static_cast<float>(alpha),
      .epsilon = static_cast<float>(options_.epsilon),
  };
  kernels::adam(args, grad.numel());
}

nlohmann::json Adam::get_config() const {
  nlohmann::json config = Optimizer::get_config();
  write_own_settings(options_, kAdamSettings<AdamOptions>, config);
  return config;
}

std::shared_ptr<Optimizer> adam_from_config(const nlohmann::json& config) {
  return optimizer_from_config<Adam>("Adam", config,
                                     [](ConfigReader& r) { return read_own_settings(r, kAdamSettings<AdamOptions>); });
}

}  // namespace chorus::optimizers
