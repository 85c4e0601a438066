// MeanAbsoluteError: Keras's mean of absolute errors over the last axis, one value per
// sample (keras.losses.MeanAbsoluteError, "mae"). Stateless; thread-safe.
#pragma once

#include <string>

#include "chorus/losses/loss.h"

namespace chorus::losses {

struct MeanAbsoluteErrorOptions {
  std::string name = "mean_absolute_error";
  std::string reduction = "sum_over_batch_size";  // see Loss
};

class MeanAbsoluteError : public Loss {
 public:
  explicit MeanAbsoluteError(MeanAbsoluteErrorOptions options = {});

  // y_true, y_pred: (batch, ..., d) of any numeric dtype (computed in float32); a rank
  // differing by a trailing 1 is aligned as Keras does. Returns (batch, ...).
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  nlohmann::json get_config() const override;
  nlohmann::json to_config() const override;
};

// mean(abs(y_true - y_pred), axis=-1): the per-sample losses, float32 of shape
// y_pred.shape[:-1]. Throws ShapeError
// "mean_absolute_error: y_true shape (64, 2) and y_pred shape (64, 3) do not match".
Tensor mean_absolute_error(const Tensor& y_true, const Tensor& y_pred);

}  // namespace chorus::losses
