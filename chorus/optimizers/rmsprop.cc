#include "chorus/optimizers/rmsprop.h"

#include "chorus/optimizers/base_options.h"
#include "chorus/optimizers/own_settings.h"
#include "chorus/optimizers/update_kernels.h"

namespace chorus::optimizers {
namespace {

constexpr OwnSetting<RMSpropOptions> kRmspropSettings[] = {
    {"rho", &RMSpropOptions::rho},
    {"momentum", &RMSpropOptions::momentum},
    {"epsilon", &RMSpropOptions::epsilon},
    {"centered", &RMSpropOptions::centered},
};

}  // namespace

RMSprop::RMSprop(RMSpropOptions options)
    : Optimizer("RMSprop", "rmsprop", std::move(options.learning_rate), base_options(options)),
      options_(std::move(options)) {}

void RMSprop::build_slots(const Variable& variable) {
  add_slot(variable, "velocity", 0.0);
  if (options_.momentum > 0) add_slot(variable, "momentum", 0.0);
  if (options_.centered) add_slot(variable, "average_gradient", 0.0);
}

void RMSprop::update_step(const Tensor& grad, const Variable& variable, size_t slot_index, double lr,
                          int64_t /*step*/) {
  const std::vector<Variable>& s = slots(slot_index);
  const bool momentum = options_.momentum > 0;
  const kernels::RmspropArgs args{
      .var = variable.value().data<float>(),
      .velocity = s[0].value().data<float>(),
      .momentum = momentum ? s[1].value().data<float>() : nullptr,
      .average_gradient = options_.centered ? s[momentum ? 2 : 1].value().data<float>() : nullptr,
      .grad = grad.data<float>(),
      .lr = static_cast<float>(lr),
      .rho = static_cast<float>(options_.rho),
      .one_minus_rho = static_cast<float>(1 - options_.rho),
      .momentum_rate = static_cast<float>(options_.momentum),
      .epsilon = static_cast<float>(options_.epsilon),
  };
  kernels::rmsprop(args, grad.numel());
}

nlohmann::json RMSprop::get_config() const {
  nlohmann::json config = Optimizer::get_config();
  write_own_settings(options_, kRmspropSettings, config);
  return config;
}

std::shared_ptr<Optimizer> rmsprop_from_config(const nlohmann::json& config) {
  return optimizer_from_config<RMSprop>("RMSprop", config,
                                        [](ConfigReader& r) { return read_own_settings(r, kRmspropSettings); });
}

}  // namespace chorus::optimizers
