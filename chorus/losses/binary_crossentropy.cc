#include "chorus/losses/binary_crossentropy.h"

#include "chorus/losses/loss_util.h"
#include "chorus/ops/operators.h"
#include "chorus/ops/reduction.h"

namespace chorus::losses {
namespace {

Tensor binary_values(const std::string& name, const Tensor& y_true, const Tensor& y_pred,
                     const BinaryCrossentropyOptions& o) {
  internal::check_label_smoothing(name, o.label_smoothing);
  auto [t, p] = internal::aligned_pair(name, y_true, y_pred);
  const int axis = p.shape().normalize_axis(o.axis, name.c_str());
  if (o.label_smoothing > 0) t = t * (1 - o.label_smoothing) + 0.5 * o.label_smoothing;
  Tensor elementwise;
  if (o.from_logits) {
    // max(x, 0) - x * y + log(1 + exp(-|x|)) = softplus(x) - x * y; its gradient
    // sigmoid(x) - y is exact everywhere (also at x = 0).
    elementwise = ops::softplus(p) - p * t;
  } else {
    const Tensor clipped = ops::clip(p, internal::kEpsilon, 1 - internal::kEpsilon);
    elementwise = -(t * ops::log(clipped) + (1.0 - t) * ops::log(1.0 - clipped));
  }
  return ops::mean(elementwise, axis);
}

}  // namespace

BinaryCrossentropy::BinaryCrossentropy(BinaryCrossentropyOptions options)
    : Loss(options.name, options.reduction), options_(std::move(options)) {
  internal::check_label_smoothing(name(), options_.label_smoothing);
}

Tensor BinaryCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  return binary_values(name(), y_true, y_pred, options_);
}

nlohmann::json BinaryCrossentropy::get_config() const {
  nlohmann::json config = base_config();
  config["from_logits"] = options_.from_logits;
  config["label_smoothing"] = options_.label_smoothing;
  config["axis"] = options_.axis;
  return config;
}

nlohmann::json BinaryCrossentropy::to_config() const {
  return {{"class_name", "BinaryCrossentropy"}, {"config", get_config()}};
}

Tensor binary_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits, double label_smoothing,
                           int axis) {
  return binary_values("binary_crossentropy", y_true, y_pred,
                       {.from_logits = from_logits, .label_smoothing = label_smoothing, .axis = axis});
}

}  // namespace chorus::losses
