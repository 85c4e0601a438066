// BinaryCrossentropy: Keras's crossentropy between binary labels and predicted
// probabilities (or logits), mean over `axis`, one value per sample
// (keras.losses.BinaryCrossentropy, "binary_crossentropy"). Stateless; thread-safe.
#pragma once

#include <string>

#include "chorus/losses/loss.h"

namespace chorus::losses {

struct BinaryCrossentropyOptions {
  // false: y_pred holds probabilities, clipped to [1e-7, 1 - 1e-7] as Keras does; true:
  // y_pred holds logits, and the loss uses the stable softplus(x) - x * y form.
  bool from_logits = false;
  // In [0, 1]: labels are squeezed towards 0.5, y * (1 - s) + 0.5 * s.
  double label_smoothing = 0;
  int axis = -1;  // the axis the element losses are averaged over
  std::string name = "binary_crossentropy";
  std::string reduction = "sum_over_batch_size";  // see Loss
};

class BinaryCrossentropy : public Loss {
 public:
  // Throws ValueError "binary_crossentropy: expected label_smoothing in [0, 1], got 1.5".
  explicit BinaryCrossentropy(BinaryCrossentropyOptions options = {});

  const BinaryCrossentropyOptions& options() const { return options_; }
  // y_true (0/1 labels, any numeric dtype), y_pred: equal shapes after Keras's rank
  // alignment, e.g. (batch, 1) and (batch,). Returns y_pred's shape without `axis`.
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  nlohmann::json get_config() const override;
  nlohmann::json to_config() const override;

 private:
  BinaryCrossentropyOptions options_;
};

// The per-sample losses (float32, y_pred's shape without `axis`). Throws ShapeError
// "binary_crossentropy: y_true shape (4, 2) and y_pred shape (4, 3) do not match",
// IndexError for a bad axis, ValueError for label_smoothing outside [0, 1].
Tensor binary_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits = false,
                           double label_smoothing = 0, int axis = -1);

}  // namespace chorus::losses
