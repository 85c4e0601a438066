// CategoricalCrossentropy: Keras's crossentropy between one-hot (or soft) labels and
// predicted class probabilities (or logits) along `axis`, one value per sample
// (keras.losses.CategoricalCrossentropy, "categorical_crossentropy"). Stateless;
// thread-safe.
#pragma once

#include <string>

#include "chorus/losses/loss.h"

namespace chorus::losses {

struct CategoricalCrossentropyOptions {
  // false: y_pred holds probabilities; each row is rescaled to sum to 1 and clipped to
  // [1e-7, 1 - 1e-7] before the log, as Keras does. true: y_pred holds logits (a fused,
  // stable log_softmax).
  bool from_logits = false;
  // In [0, 1]: labels become y * (1 - s) + s / num_classes.
  double label_smoothing = 0;
  int axis = -1;  // the class axis
  std::string name = "categorical_crossentropy";
  std::string reduction = "sum_over_batch_size";  // see Loss
};

class CategoricalCrossentropy : public Loss {
 public:
  // Throws ValueError for label_smoothing outside [0, 1].
  explicit CategoricalCrossentropy(CategoricalCrossentropyOptions options = {});

  const CategoricalCrossentropyOptions& options() const { return options_; }
  // y_true, y_pred: (batch, ..., classes) of equal shapes. Returns y_pred's shape without
  // `axis`.
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  nlohmann::json get_config() const override;
  nlohmann::json to_config() const override;

 private:
  CategoricalCrossentropyOptions options_;
};

// -sum(y_true * log(p), axis) with p = softmax(y_pred) (from_logits) or the rescaled,
// clipped y_pred: the per-sample losses, float32. Throws ShapeError
// "categorical_crossentropy: y_true shape (4, 2) and y_pred shape (4, 3) do not match",
// IndexError for a bad axis, ValueError for label_smoothing outside [0, 1].
Tensor categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits = false,
                                double label_smoothing = 0, int axis = -1);

}  // namespace chorus::losses
