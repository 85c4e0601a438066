// Huber: Keras's Huber loss, quadratic for errors up to `delta` and linear beyond, mean
// over the last axis, one value per sample (keras.losses.Huber, "huber"). Stateless;
// thread-safe.
#pragma once

#include <string>

#include "chorus/losses/loss.h"

namespace chorus::losses {

struct HuberOptions {
  // Where the loss turns from 0.5 * x^2 to delta * |x| - 0.5 * delta^2. Must be > 0.
  double delta = 1.0;
  std::string name = "huber_loss";  // Keras's default name for the class
  std::string reduction = "sum_over_batch_size";  // see Loss
};

class Huber : public Loss {
 public:
  // Throws ValueError "huber_loss: expected delta > 0, got -1".
  explicit Huber(HuberOptions options = {});

  double delta() const { return delta_; }
  // y_true, y_pred: (batch, ..., d), aligned as Keras does. Returns (batch, ...).
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  nlohmann::json get_config() const override;
  nlohmann::json to_config() const override;

 private:
  double delta_;
};

// mean(where(|e| <= delta, 0.5 e^2, delta |e| - 0.5 delta^2), axis=-1) with e = y_pred -
// y_true: the per-sample losses, float32 of shape y_pred.shape[:-1]. Throws ShapeError
// like mean_squared_error ("huber: y_true shape ... do not match"), ValueError for
// delta <= 0.
Tensor huber(const Tensor& y_true, const Tensor& y_pred, double delta = 1.0);

}  // namespace chorus::losses
