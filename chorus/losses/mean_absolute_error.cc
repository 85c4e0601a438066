#include "chorus/losses/mean_absolute_error.h"

#include "chorus/losses/loss_util.h"
#include "chorus/ops/elementwise.h"
#include "chorus/ops/reduction.h"

namespace chorus::losses {
namespace {

Tensor absolute_error(const std::string& name, const Tensor& y_true, const Tensor& y_pred) {
  const auto [t, p] = internal::aligned_pair(name, y_true, y_pred);
  return ops::mean(ops::abs(ops::subtract(t, p)), -1);
}

}  // namespace

MeanAbsoluteError::MeanAbsoluteError(MeanAbsoluteErrorOptions options)
    : Loss(std::move(options.name), std::move(options.reduction)) {}

Tensor MeanAbsoluteError::call(const Tensor& y_true, const Tensor& y_pred) const {
  return absolute_error(name(), y_true, y_pred);
}

nlohmann::json MeanAbsoluteError::get_config() const { return base_config(); }

nlohmann::json MeanAbsoluteError::to_config() const {
  return {{"class_name", "MeanAbsoluteError"}, {"config", get_config()}};
}

Tensor mean_absolute_error(const Tensor& y_true, const Tensor& y_pred) {
  return absolute_error("mean_absolute_error", y_true, y_pred);
}

}  // namespace chorus::losses
