#include "chorus/metrics/mean.h"

#include "chorus/metrics/metric_util.h"

namespace chorus::metrics {

Mean::Mean(MeanOptions options) : Metric(std::move(options.name), 2) {}

void Mean::update_state(const Tensor& values, const Tensor& sample_weight) {
  if (!values.defined()) throw_error<ValueError>("{}: values is an undefined tensor", name());
  internal::accumulate(name(), {values.to_vector<double>(), values.shape()}, sample_weight, internal::Reduce::kMean,
                       state_[0], state_[1]);
}

void Mean::update_state(double value, double weight) {
  state_[0] += value * weight;
  state_[1] += weight;
}

void Mean::update_state(const Tensor&, const Tensor&, const Tensor&) {
  throw_error<ValueError>("{}: a Mean takes update_state(values, sample_weight), not (y_true, y_pred)", name());
}

double Mean::result() const { return state_[1] == 0 ? 0.0 : state_[0] / state_[1]; }

std::unique_ptr<Metric> Mean::clone() const { return std::make_unique<Mean>(MeanOptions{name()}); }

nlohmann::json Mean::to_config() const { return {{"class_name", "Mean"}, {"config", get_config()}}; }

}  // namespace chorus::metrics
