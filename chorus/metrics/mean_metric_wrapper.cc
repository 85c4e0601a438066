#include "chorus/metrics/mean_metric_wrapper.h"

namespace chorus::metrics {

void MeanMetricWrapper::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  internal::check_defined(name(), y_true, y_pred);
  internal::accumulate(name(), values(y_true, y_pred), sample_weight, internal::Reduce::kMean, state_[0], state_[1]);
}

double MeanMetricWrapper::result() const { return state_[1] == 0 ? 0.0 : state_[0] / state_[1]; }

}  // namespace chorus::metrics
