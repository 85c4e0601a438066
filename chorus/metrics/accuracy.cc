#include "chorus/metrics/accuracy.h"

#include <array>
#include <utility>

#include "chorus/metrics/accuracy_functions.h"

namespace chorus::metrics {
namespace {

constexpr std::array<std::pair<AccuracyKind, const char*>, 5> kKindNames = {{
    {AccuracyKind::kExact, "exact"},
    {AccuracyKind::kAuto, "auto"},
    {AccuracyKind::kBinary, "binary"},
    {AccuracyKind::kCategorical, "categorical"},
    {AccuracyKind::kSparseCategorical, "sparse_categorical"},
}};

// Keras's is_binary_or_sparse_categorical (trainers/compile_utils.py).
AccuracyKind resolve_kind(const std::string& name, const Tensor& y_true, const Tensor& y_pred) {
  if (y_true.rank() == 0 || y_pred.rank() == 0) {
    throw_error<ShapeError>("{}: expected y_true and y_pred of rank >= 1, got shapes {} and {}", name,
                            y_true.shape().to_string(), y_pred.shape().to_string());
  }
  if (y_pred.dim(-1) == 1) return AccuracyKind::kBinary;
  if (y_true.rank() < y_pred.rank() || y_true.dim(-1) == 1) return AccuracyKind::kSparseCategorical;
  return AccuracyKind::kCategorical;
}

}  // namespace

Accuracy::Accuracy(AccuracyOptions options) : MeanMetricWrapper(std::move(options.name)), kind_(options.kind) {}

Accuracy Accuracy::automatic(std::string name) {
  return Accuracy({.name = std::move(name), .kind = AccuracyKind::kAuto});
}

internal::SampleValues Accuracy::values(const Tensor& y_true, const Tensor& y_pred) {
  if (kind_ == AccuracyKind::kAuto) kind_ = resolve_kind(name(), y_true, y_pred);
  switch (kind_) {
    case AccuracyKind::kBinary:
      return internal::binary_accuracy_values(name(), y_true, y_pred, 0.5);
    case AccuracyKind::kCategorical:
      return internal::categorical_accuracy_values(name(), y_true, y_pred);
    case AccuracyKind::kSparseCategorical:
      return internal::sparse_categorical_accuracy_values(name(), y_true, y_pred);
    case AccuracyKind::kExact:
    case AccuracyKind::kAuto:
      break;
  }
  return internal::accuracy_values(name(), y_true, y_pred);
}

std::unique_ptr<Metric> Accuracy::clone() const {
  return std::make_unique<Accuracy>(AccuracyOptions{.name = name(), .kind = kind_});
}

nlohmann::json Accuracy::get_config() const { return {{"name", name()}, {"kind", kind_name(kind_)}}; }

nlohmann::json Accuracy::to_config() const { return {{"class_name", "Accuracy"}, {"config", get_config()}}; }

std::string Accuracy::kind_name(AccuracyKind kind) {
  for (const auto& [k, text] : kKindNames) {
    if (k == kind) return text;
  }
  return "exact";
}

AccuracyKind Accuracy::parse_kind(const std::string& kind) {
  for (const auto& [k, text] : kKindNames) {
    if (kind == text) return k;
  }
  throw_error<ValueError>(
      "Accuracy: unknown kind '{}'; expected exact, auto, binary, categorical or sparse_categorical", kind);
}

}  // namespace chorus::metrics
