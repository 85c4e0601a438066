// Sum: the (weighted) running sum of the values given to update_state (Keras's
// keras.metrics.Sum). State: {total}. One instance per thread.
#pragma once

#include <string>

#include "chorus/metrics/metric.h"

namespace chorus::metrics {

struct SumOptions {
  std::string name = "sum";
};

class Sum : public Metric {
 public:
  explicit Sum(SumOptions options = {});

  // Adds sum(values * sample_weight) (values of any shape and numeric dtype; a
  // sample_weight of shape (batch,) weighs each sample's values, undefined means 1).
  // Throws ShapeError when the weight does not match: "sum: sample_weight shape (3,)
  // does not match the values' shape (4,)".
  void update_state(const Tensor& values, const Tensor& sample_weight = {});
  // total += value * weight.
  void update_state(double value, double weight = 1);
  // Metric's (y_true, y_pred) form does not apply to a Sum: throws ValueError.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

  double result() const override { return state_[0]; }
  std::unique_ptr<Metric> clone() const override;
  nlohmann::json to_config() const override;
};

}  // namespace chorus::metrics
