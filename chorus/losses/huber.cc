#include "chorus/losses/huber.h"

#include "chorus/core/creation.h"
#include "chorus/losses/loss_util.h"
#include "chorus/ops/elementwise.h"
#include "chorus/ops/reduction.h"

namespace chorus::losses {
namespace {

void check_delta(const std::string& name, double delta) {
  if (!(delta > 0)) throw_error<ValueError>("{}: expected delta > 0, got {}", name, delta);
}

Tensor huber_values(const std::string& name, const Tensor& y_true, const Tensor& y_pred, double delta) {
  check_delta(name, delta);
  const auto [t, p] = internal::aligned_pair(name, y_true, y_pred);
  const Tensor error = ops::subtract(p, t);
  const Tensor abs_error = ops::abs(error);
  const Tensor quadratic = ops::multiply(ops::square(error), scalar(0.5));
  const Tensor linear = ops::subtract(ops::multiply(abs_error, scalar(delta)), scalar(0.5 * delta * delta));
  return ops::mean(ops::where(ops::less_equal(abs_error, scalar(delta)), quadratic, linear), -1);
}

}  // namespace

Huber::Huber(HuberOptions options)
    : Loss(std::move(options.name), std::move(options.reduction)), delta_(options.delta) {
  check_delta(name(), delta_);
}

Tensor Huber::call(const Tensor& y_true, const Tensor& y_pred) const {
  return huber_values(name(), y_true, y_pred, delta_);
}

nlohmann::json Huber::get_config() const {
  nlohmann::json config = base_config();
  config["delta"] = delta_;
  return config;
}

nlohmann::json Huber::to_config() const { return {{"class_name", "Huber"}, {"config", get_config()}}; }

Tensor huber(const Tensor& y_true, const Tensor& y_pred, double delta) {
  return huber_values("huber", y_true, y_pred, delta);
}

}  // namespace chorus::losses
