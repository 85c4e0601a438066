#include "chorus/optimizers/adagrad.h"

#include <cfloat>
#include <cmath>

#include "chorus/core/error.h"
#include "chorus/optimizers/base_options.h"
#include "chorus/optimizers/update_kernels.h"

namespace chorus::optimizers {

Adagrad::Adagrad(AdagradOptions options)
    : Optimizer("Adagrad", "adagrad", std::move(options.learning_rate), base_options(options)),
      initial_accumulator_value_(options.initial_accumulator_value + 0.0),  // -0 -> +0: see update_kernels.h
      epsilon_(options.epsilon) {
  if (!(initial_accumulator_value_ >= 0)) {
    throw_error<ValueError>("adagrad: expected initial_accumulator_value >= 0, got {}", initial_accumulator_value_);
  }
}

void Adagrad::build_slots(const Variable& variable) {
  add_slot(variable, "accumulator", initial_accumulator_value_);
}

void Adagrad::update_step(const Tensor& grad, const Variable& variable, size_t slot_index, double lr,
                          int64_t /*step*/) {
  kernels::AdagradArgs args{
      .var = variable.value().data<float>(),
      .accumulator = slots(slot_index)[0].value().data<float>(),
      .grad = grad.data<float>(),
      .lr = static_cast<float>(lr),
      .epsilon = static_cast<float>(epsilon_),
  };
  // Skipping the all-zero pieces (an embedding's untouched rows) is exact under these
  // conditions (update_kernels.h); otherwise every element takes the dense update.
  args.skip_zero_pieces = std::isfinite(args.lr) && args.lr >= 0 && args.epsilon >= FLT_MIN;
  kernels::adagrad(args, grad.numel());
}

nlohmann::json Adagrad::get_config() const {
  nlohmann::json config = Optimizer::get_config();
  config["initial_accumulator_value"] = initial_accumulator_value_;
  config["epsilon"] = epsilon_;
  return config;
}

}  // namespace chorus::optimizers
