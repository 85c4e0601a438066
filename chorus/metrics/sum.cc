#include "chorus/metrics/sum.h"

#include "chorus/metrics/metric_util.h"

namespace chorus::metrics {

Sum::Sum(SumOptions options) : Metric(std::move(options.name), 1) {}

void Sum::update_state(const Tensor& values, const Tensor& sample_weight) {
  if (!values.defined()) throw_error<ValueError>("{}: values is an undefined tensor", name());
  double unused_count = 0;
  internal::accumulate(name(), {values.to_vector<double>(), values.shape()}, sample_weight, internal::Reduce::kSum,
                       state_[0], unused_count);
}

void Sum::update_state(double value, double weight) { state_[0] += value * weight; }

void Sum::update_state(const Tensor&, const Tensor&, const Tensor&) {
  throw_error<ValueError>("{}: a Sum takes update_state(values, sample_weight), not (y_true, y_pred)", name());
}

std::unique_ptr<Metric> Sum::clone() const { return std::make_unique<Sum>(SumOptions{name()}); }

nlohmann::json Sum::to_config() const { return {{"class_name", "Sum"}, {"config", get_config()}}; }

}  // namespace chorus::metrics
