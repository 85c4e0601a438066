#include "chorus/optimizers/adagrad.h"

#include <cfloat>
#include <cmath>

#include "chorus/core/creation.h"
#include "chorus/core/error.h"
#include "chorus/optimizers/base_options.h"
#include "chorus/optimizers/own_settings.h"
#include "chorus/optimizers/sparse_rows.h"
#include "chorus/optimizers/update_kernels.h"

namespace chorus::optimizers {
namespace {

constexpr OwnSetting<AdagradOptions> kAdagradSettings[] = {
    {"initial_accumulator_value", &AdagradOptions::initial_accumulator_value},
    {"epsilon", &AdagradOptions::epsilon},
};

}  // namespace

Adagrad::Adagrad(AdagradOptions options)
    : Optimizer("Adagrad", "adagrad", std::move(options.learning_rate), base_options(options)),
      options_(std::move(options)) {
  options_.initial_accumulator_value += 0.0;  // -0 -> +0: see update_kernels.h
  if (!(options_.initial_accumulator_value >= 0)) {
    throw_error<ValueError>("adagrad: expected initial_accumulator_value >= 0, got {}",
                            options_.initial_accumulator_value);
  }
}

void Adagrad::build_slots(const Variable& variable) {
  add_slot(variable, "accumulator", options_.initial_accumulator_value);
}

void Adagrad::update_step(const Tensor& grad, const Variable& variable, size_t slot_index, double lr,
                          int64_t /*step*/) {
  kernels::AdagradArgs args{
      .var = variable.value().data<float>(),
      .accumulator = slots(slot_index)[0].value().data<float>(),
      .grad = grad.data<float>(),
      .lr = static_cast<float>(lr),
      .epsilon = static_cast<float>(options_.epsilon),
  };
  // Skipping the all-zero pieces (an embedding's untouched rows) is exact under these
  // conditions (update_kernels.h); otherwise every element takes the dense update.
  args.skip_zero_pieces = std::isfinite(args.lr) && args.lr >= 0 && args.epsilon >= FLT_MIN;
  kernels::adagrad(args, grad.numel());
}

void Adagrad::update_step_sparse(const autograd::IndexedSlices& grad, const Variable& variable, size_t slot_index,
                                 double lr, int64_t step) {
  const auto lr32 = static_cast<float>(lr), epsilon = static_cast<float>(options_.epsilon);
  // Rows a batch did not touch keep their bits under the dense update only on the
  // skip_zero_pieces conditions (update_kernels.h); otherwise the dense update it is.
  if (!(std::isfinite(lr32) && lr32 >= 0 && epsilon >= FLT_MIN)) {
    Optimizer::update_step_sparse(grad, variable, slot_index, lr, step);
    return;
  }
  if (!SparseRows::pays(variable, grad)) {
    // Unless the table has well over the batch's rows, the dense update's sequential
    // passes beat grouping the rows (docs/benchmarks.md); the bits are the same either
    // way. Its gradient goes into a buffer kept at +0.0 between steps: the rows are added
    // into it and the update resets what it reads, so a step costs no table-sized fill.
    Tensor& dense = zeroed_gradient(slot_index, variable);
    grad.add_to(dense);
    kernels::adagrad({.var = variable.value().data<float>(),
                      .accumulator = slots(slot_index)[0].value().data<float>(),
                      .grad = dense.data<float>(),
                      .lr = lr32,
                      .epsilon = epsilon,
                      .skip_zero_pieces = true,
                      .reset_grad = dense.data<float>()},
                     dense.numel());
    return;
  }
  const SparseRows rows(grad);
  kernels::adagrad_groups({.var = variable.value().data<float>(),
                           .accumulator = slots(slot_index)[0].value().data<float>(),
                           .grad = nullptr,
                           .lr = lr32,
                           .epsilon = epsilon},
                          rows.groups(), 0, rows.size());
}

Tensor& Adagrad::zeroed_gradient(size_t slot_index, const Variable& variable) {
  if (zeroed_gradients_.size() <= slot_index) zeroed_gradients_.resize(slot_index + 1);
  Tensor& buffer = zeroed_gradients_[slot_index];
  if (!buffer.defined() || buffer.shape() != variable.shape()) buffer = zeros(variable.shape(), kFloat32);
  return buffer;
}

nlohmann::json Adagrad::get_config() const {
  nlohmann::json config = Optimizer::get_config();
  write_own_settings(options_, kAdagradSettings, config);
  return config;
}

std::shared_ptr<Optimizer> adagrad_from_config(const nlohmann::json& config) {
  return optimizer_from_config<Adagrad>("Adagrad", config,
                                        [](ConfigReader& r) { return read_own_settings(r, kAdagradSettings); });
}

}  // namespace chorus::optimizers
