// Metric: the state merge every metric shares. The registry of the built-in metrics is
// registry.cc.
#include "chorus/metrics/metric.h"

namespace chorus::metrics {

void Metric::merge_state(std::span<const double> other) {
  if (other.size() != state_.size()) {
    throw_error<ValueError>("{}: cannot merge a state of {} values into one of {}", name_, other.size(), state_.size());
  }
  for (size_t i = 0; i < state_.size(); ++i) state_[i] += other[i];
}

}  // namespace chorus::metrics
