#include "chorus/losses/mean_squared_error.h"

#include "chorus/losses/loss_util.h"
#include "chorus/ops/elementwise.h"
#include "chorus/ops/reduction.h"

namespace chorus::losses {
namespace {

Tensor squared_error(const std::string& name, const Tensor& y_true, const Tensor& y_pred) {
  const auto [t, p] = internal::aligned_pair(name, y_true, y_pred);
  return ops::mean(ops::square(ops::subtract(t, p)), -1);
}

}  // namespace

MeanSquaredError::MeanSquaredError(MeanSquaredErrorOptions options)
    : Loss(std::move(options.name), std::move(options.reduction)) {}

Tensor MeanSquaredError::call(const Tensor& y_true, const Tensor& y_pred) const {
  return squared_error(name(), y_true, y_pred);
}

nlohmann::json MeanSquaredError::get_config() const { return base_config(); }

nlohmann::json MeanSquaredError::to_config() const {
  return {{"class_name", "MeanSquaredError"}, {"config", get_config()}};
}

Tensor mean_squared_error(const Tensor& y_true, const Tensor& y_pred) {
  return squared_error("mean_squared_error", y_true, y_pred);
}

}  // namespace chorus::losses
