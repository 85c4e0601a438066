#include "chorus/optimizers/sgd.h"

#include <cmath>

#include "chorus/core/error.h"
#include "chorus/optimizers/base_options.h"
#include "chorus/optimizers/own_settings.h"
#include "chorus/optimizers/sparse_rows.h"
#include "chorus/optimizers/update_kernels.h"

namespace chorus::optimizers {
namespace {

constexpr OwnSetting<SGDOptions> kSgdSettings[] = {
    {"momentum", &SGDOptions::momentum},
    {"nesterov", &SGDOptions::nesterov},
};

}  // namespace

SGD::SGD(SGDOptions options)
    : Optimizer("SGD", "sgd", std::move(options.learning_rate), base_options(options)), options_(std::move(options)) {
  if (!(options_.momentum >= 0 && options_.momentum <= 1)) {
    throw_error<ValueError>("sgd: expected momentum in [0, 1], got {}", options_.momentum);
  }
}

void SGD::build_slots(const Variable& variable) {
  if (options_.momentum != 0) add_slot(variable, "momentum", 0.0);
}

void SGD::update_step(const Tensor& grad, const Variable& variable, size_t slot_index, double lr, int64_t /*step*/) {
  const kernels::SgdArgs args{
      .var = variable.value().data<float>(),
      .momentum = options_.momentum != 0 ? slots(slot_index)[0].value().data<float>() : nullptr,
      .grad = grad.data<float>(),
      .lr = static_cast<float>(lr),
      .momentum_rate = static_cast<float>(options_.momentum),
      .nesterov = options_.nesterov,
  };
  kernels::sgd(args, grad.numel());
}

void SGD::update_step_sparse(const autograd::IndexedSlices& grad, const Variable& variable, size_t slot_index,
                             double lr, int64_t step) {
  const auto lr32 = static_cast<float>(lr);
  // var - 0 * lr keeps var's bits only for a finite lr >= 0 (-0.0 - -0.0 is +0.0).
  if (options_.momentum != 0 || !(std::isfinite(lr32) && lr32 >= 0) || !SparseRows::pays(variable, grad)) {
    Optimizer::update_step_sparse(grad, variable, slot_index, lr, step);
    return;
  }
  const SparseRows rows(grad);
  kernels::sgd_groups({.var = variable.value().data<float>(),
                       .momentum = nullptr,
                       .grad = nullptr,
                       .lr = lr32,
                       .momentum_rate = 0.0f,
                       .nesterov = false},
                      rows.groups(), 0, rows.size());
}

nlohmann::json SGD::get_config() const {
  nlohmann::json config = Optimizer::get_config();
  write_own_settings(options_, kSgdSettings, config);
  return config;
}

std::shared_ptr<Optimizer> sgd_from_config(const nlohmann::json& config) {
  return optimizer_from_config<SGD>("SGD", config, [](ConfigReader& r) { return read_own_settings(r, kSgdSettings); });
}

}  // namespace chorus::optimizers
