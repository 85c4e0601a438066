#include "chorus/recsys/retrieval_metrics.h"

#include <algorithm>
#include <cmath>

#include "chorus/core/error.h"

namespace chorus::recsys {
namespace {

std::string default_name(const RecallAtKOptions& options) {
  return options.name.empty() ? "recall_at_" + std::to_string(options.k) : options.name;
}

// Whether `id` is a usable true id: a non-negative integer value.
bool is_true_id(double id) { return id >= 0 && std::floor(id) == id; }

}  // namespace

RecallAtK::RecallAtK(RecallAtKOptions options) : MeanMetricWithOptions(default_name(options), options) {
  metrics::internal::check_k(name(), k());
}

metrics::internal::SampleValues RecallAtK::values(const Tensor& y_true, const Tensor& y_pred) {
  const bool shapes_ok = y_pred.rank() == 2 && y_pred.dim(1) >= 1 && (y_true.rank() == 1 || y_true.rank() == 2) &&
                         y_true.dim(0) == y_pred.dim(0);
  if (!shapes_ok) {
    throw_error<ShapeError>(
        "{}: expected y_pred of shape (batch, m) with y_true of shape (batch,), (batch, 1) or (batch, t); got "
        "y_true {} and y_pred {}",
        name(), y_true.shape().to_string(), y_pred.shape().to_string());
  }
  const int64_t batch = y_pred.dim(0), m = y_pred.dim(1), kept = std::min(k(), m);
  const int64_t t = y_true.rank() == 1 ? 1 : y_true.dim(1);
  const std::vector<double> truth = y_true.to_vector<double>();
  const std::vector<double> retrieved = y_pred.to_vector<double>();
  std::vector<double> values(static_cast<size_t>(batch), 0.0);
  std::vector<double> relevant;
  for (int64_t b = 0; b < batch; ++b) {
    relevant.assign(truth.begin() + b * t, truth.begin() + (b + 1) * t);
    relevant.erase(std::remove_if(relevant.begin(), relevant.end(), [](double id) { return !is_true_id(id); }),
                   relevant.end());
    std::sort(relevant.begin(), relevant.end());
    relevant.erase(std::unique(relevant.begin(), relevant.end()), relevant.end());
    if (relevant.empty()) continue;
    const auto first = retrieved.begin() + b * m;
    int64_t hits = 0;
    for (double id : relevant) hits += std::find(first, first + kept, id) != first + kept ? 1 : 0;
    values[static_cast<size_t>(b)] = static_cast<double>(hits) / static_cast<double>(relevant.size());
  }
  return {std::move(values), Shape{batch}};
}

nlohmann::json RecallAtK::get_config() const { return {{"name", name()}, {"k", k()}}; }

}  // namespace chorus::recsys
