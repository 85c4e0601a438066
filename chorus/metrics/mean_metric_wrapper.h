// MeanMetricWrapper: the base of the metrics that average a per-sample value of
// (y_true, y_pred) — accuracies, errors (Keras's MeanMetricWrapper). State: {total,
// count}; result() = total / count, or 0 before any sample. One instance per thread.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "chorus/metrics/metric.h"
#include "chorus/metrics/metric_util.h"

namespace chorus::metrics {

class MeanMetricWrapper : public Metric {
 public:
  explicit MeanMetricWrapper(std::string name) : Metric(std::move(name), 2) {}

  // Adds sum(sample_weight * value) and sum(sample_weight) over the batch (Keras's
  // reduction, see internal::accumulate); sample_weight (batch,) or undefined (all 1).
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) final;
  double result() const override;

 protected:
  // The per-sample values for one batch (e.g. 1/0 matches), checking the shapes.
  virtual internal::SampleValues values(const Tensor& y_true, const Tensor& y_pred) = 0;
};

// MeanMetricWithOptions<Self, Options>: what a MeanMetricWrapper class configured by an
// options struct (with a `name` and the metric's own settings) has in common — Keras's
// MeanMetricWrapper(fn, name, **kwargs) with the options as the kwargs. It keeps the
// options; clone() remakes Self from them under the current name, and to_config() wraps
// get_config() under Self::kClassName. Self states its Keras class name, values() and,
// when it has settings besides the name, get_config().
template <class Self, class Options>
class MeanMetricWithOptions : public MeanMetricWrapper {
 public:
  explicit MeanMetricWithOptions(Options options = {})
      : MeanMetricWrapper(options.name), options_(std::move(options)) {}

  // As constructed: after set_name(), name() is the metric's name, not options().name.
  const Options& options() const { return options_; }
  std::unique_ptr<Metric> clone() const override {
    Options options = options_;
    options.name = name();
    return std::make_unique<Self>(std::move(options));
  }
  nlohmann::json to_config() const override { return {{"class_name", Self::kClassName}, {"config", get_config()}}; }

 protected:
  // For a metric whose name is derived from its options (an empty name's default).
  MeanMetricWithOptions(std::string name, Options options)
      : MeanMetricWrapper(std::move(name)), options_(std::move(options)) {}

 private:
  Options options_;
};

}  // namespace chorus::metrics
