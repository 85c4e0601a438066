// MeanSquaredError: Keras's mean of squared errors over the last axis, one value per
// sample (keras.losses.MeanSquaredError, "mse"). Stateless; thread-safe.
#pragma once

#include <string>

#include "chorus/losses/loss.h"

namespace chorus::losses {

struct MeanSquaredErrorOptions {
  std::string name = "mean_squared_error";
  std::string reduction = "sum_over_batch_size";  // see Loss
};

class MeanSquaredError : public Loss {
 public:
  explicit MeanSquaredError(MeanSquaredErrorOptions options = {});

  // y_true, y_pred: (batch, ..., d) of any numeric dtype (computed in float32); a rank
  // differing by a trailing 1 is aligned as Keras does. Returns (batch, ...).
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  nlohmann::json get_config() const override;
  nlohmann::json to_config() const override;
};

// mean(square(y_true - y_pred), axis=-1): the per-sample losses, float32 of shape
// y_pred.shape[:-1]. Throws ShapeError
// "mean_squared_error: y_true shape (64, 2) and y_pred shape (64, 3) do not match".
Tensor mean_squared_error(const Tensor& y_true, const Tensor& y_pred);

}  // namespace chorus::losses
