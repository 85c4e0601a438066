// SparseCategoricalCrossentropy: Keras's crossentropy between integer class labels and
// predicted class probabilities (or logits) along the last axis, one value per sample
// (keras.losses.SparseCategoricalCrossentropy). From logits it is one fused op: a
// log_softmax pass and a gather forward, softmax minus the label's one-hot backward,
// with no one-hot tensor. Stateless; thread-safe.
#pragma once

#include <string>

#include "chorus/losses/loss.h"

namespace chorus::losses {

struct SparseCategoricalCrossentropyOptions {
  // false: y_pred holds probabilities; each row is rescaled to sum to 1 and clipped to
  // [1e-7, 1 - 1e-7] before the log, as Keras does. true: y_pred holds logits.
  bool from_logits = false;
  std::string name = "sparse_categorical_crossentropy";
  std::string reduction = "sum_over_batch_size";  // see Loss
};

class SparseCategoricalCrossentropy : public Loss {
 public:
  explicit SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions options = {});

  bool from_logits() const { return from_logits_; }
  // y_true: labels of shape y_pred.shape[:-1] or that with a trailing 1, e.g. (batch,) or
  // (batch, 1) for y_pred (batch, classes); int32, int64, or floats holding integers.
  // Returns float32 of shape y_pred.shape[:-1].
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  nlohmann::json get_config() const override;
  nlohmann::json to_config() const override;

 private:
  bool from_logits_;
};

// -log(p[label]) per sample, with p = softmax(y_pred) (from_logits) or the rescaled,
// clipped y_pred. Throws (the message names the loss):
//   IndexError "sparse_categorical_crossentropy: label 12 out of range [0, 10) at batch
//     element 3" (for labels of rank >= 2: "at index (3, 5)");
//   ValueError "...: label 1.5 at batch element 0 is not an integer";
//   DTypeError "...: expected integer labels (int32, int64, or floats holding
//     integers), got bool";
//   ShapeError "...: expected y_true of shape (4,) or (4, 1) to match y_pred of shape
//     (4, 10), got (5,)".
Tensor sparse_categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits = false);

}  // namespace chorus::losses
