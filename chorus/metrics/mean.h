// Mean: the (weighted) running mean of the values given to update_state (Keras's
// keras.metrics.Mean); the trainer's loss tracker. State: {total, count}. One instance
// per thread.
#pragma once

#include <string>

#include "chorus/metrics/metric.h"

namespace chorus::metrics {

struct MeanOptions {
  std::string name = "mean";
};

class Mean : public Metric {
 public:
  explicit Mean(MeanOptions options = {});

  // Adds the values (any shape and numeric dtype): a value of rank >= 2 is first averaged
  // over its trailing axes to one value per sample; sample_weight ((batch,) or
  // undefined: 1 each) weighs the samples; a scalar counts once. Throws ShapeError when
  // the weight does not match: "mean: sample_weight shape (3,) does not match the values'
  // shape (4,)".
  void update_state(const Tensor& values, const Tensor& sample_weight = {});
  // Adds one value with `weight`: total += value * weight, count += weight.
  void update_state(double value, double weight = 1);
  // Metric's (y_true, y_pred) form does not apply to a Mean: throws ValueError (a Mean
  // is updated with values, not with labels and predictions).
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

  // total / count, 0 before any value.
  double result() const override;
  std::unique_ptr<Metric> clone() const override;
  nlohmann::json to_config() const override;
};

}  // namespace chorus::metrics
