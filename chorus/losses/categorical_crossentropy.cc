#include "chorus/losses/categorical_crossentropy.h"

#include "chorus/losses/loss_util.h"
#include "chorus/ops/operators.h"
#include "chorus/ops/reduction.h"

namespace chorus::losses {
namespace {

Tensor categorical_values(const std::string& name, const Tensor& y_true, const Tensor& y_pred,
                          const CategoricalCrossentropyOptions& o) {
  internal::check_label_smoothing(name, o.label_smoothing);
  auto [t, p] = internal::aligned_pair(name, y_true, y_pred);
  const int axis = p.shape().normalize_axis(o.axis, name.c_str());
  if (o.label_smoothing > 0) {
    t = t * (1 - o.label_smoothing) + o.label_smoothing / static_cast<double>(p.dim(axis));
  }
  Tensor log_probs;
  if (o.from_logits) {
    log_probs = ops::log_softmax(p, axis);
  } else {
    const Tensor normalised = p / ops::sum(p, axis, /*keepdims=*/true);
    log_probs = ops::log(ops::clip(normalised, internal::kEpsilon, 1 - internal::kEpsilon));
  }
  return -ops::sum(t * log_probs, axis);
}

}  // namespace

CategoricalCrossentropy::CategoricalCrossentropy(CategoricalCrossentropyOptions options)
    : Loss(options.name, options.reduction), options_(std::move(options)) {
  internal::check_label_smoothing(name(), options_.label_smoothing);
}

Tensor CategoricalCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  return categorical_values(name(), y_true, y_pred, options_);
}

nlohmann::json CategoricalCrossentropy::get_config() const {
  nlohmann::json config = base_config();
  config["from_logits"] = options_.from_logits;
  config["label_smoothing"] = options_.label_smoothing;
  config["axis"] = options_.axis;
  return config;
}

nlohmann::json CategoricalCrossentropy::to_config() const {
  return {{"class_name", "CategoricalCrossentropy"}, {"config", get_config()}};
}

Tensor categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits, double label_smoothing,
                                int axis) {
  return categorical_values("categorical_crossentropy", y_true, y_pred,
                            {.from_logits = from_logits, .label_smoothing = label_smoothing, .axis = axis});
}

}  // namespace chorus::losses
