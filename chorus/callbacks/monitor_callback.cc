#include "chorus/callbacks/monitor_callback.h"

#include <array>
#include <cmath>
#include <iostream>
#include <string_view>

#include "chorus/core/error.h"

namespace chorus::callbacks {
namespace {

// Keras's metric classes carry a _direction; chorus metrics do not, so the names of the
// metrics Keras ships stand in for it.
constexpr std::array<std::string_view, 14> kHigherIsBetter = {
    "accuracy", "acc", "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
    "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy", "auc", "precision", "recall",
    "f1_score", "fbeta_score", "r2_score", "cosine_similarity"};
constexpr std::array<std::string_view, 20> kLowerIsBetter = {
    "mse", "mean_squared_error", "mae", "mean_absolute_error", "mape", "mean_absolute_percentage_error",
    "msle", "mean_squared_logarithmic_error", "root_mean_squared_error", "binary_crossentropy",
    "categorical_crossentropy", "sparse_categorical_crossentropy", "kl_divergence", "kld", "poisson", "hinge",
    "squared_hinge", "categorical_hinge", "log_cosh", "logcosh"};

bool contains(auto& names, std::string_view name) {
  for (std::string_view n : names) {
    if (n == name) return true;
  }
  return false;
}

bool resolve_minimizing(const std::string& class_name, const std::string& monitor, Mode mode) {
  if (mode != Mode::kAuto && mode != Mode::kMin && mode != Mode::kMax) {
    throw_error<ValueError>("{}: expected mode Mode::kAuto, Mode::kMin or Mode::kMax. Received: mode={}", class_name,
                            static_cast<int>(mode));
  }
  if (mode == Mode::kMin) return true;
  if (mode == Mode::kMax) return false;
  std::string_view metric = monitor;
  if (metric.starts_with("val_")) metric.remove_prefix(4);
  if (metric == "loss" || metric.ends_with("_loss")) return true;
  if (contains(kHigherIsBetter, metric)) return false;
  if (contains(kLowerIsBetter, metric)) return true;
  throw_error<ValueError>(
      "{} callback received monitor={}, but chorus isn't able to automatically determine whether that metric "
      "should be maximized or minimized. Pass `.mode = Mode::kMax` in order to monitor based on the highest "
      "metric value, or pass `.mode = Mode::kMin` in order to use the lowest value.",
      class_name, monitor);
}

}  // namespace

MonitorCallback::MonitorCallback(std::string class_name, std::string monitor, Mode mode, std::optional<double> best,
                                 double min_delta)
    : best_(best),
      class_name_(std::move(class_name)),
      monitor_(std::move(monitor)),
      minimizing_(resolve_minimizing(class_name_, monitor_, mode)),
      min_delta_(std::abs(min_delta)) {}

bool MonitorCallback::is_improvement(double value, std::optional<double> reference) const {
  if (!reference) return true;
  return minimizing_ ? value + min_delta_ < *reference : value - min_delta_ > *reference;
}

std::optional<double> MonitorCallback::monitor_value(const models::Logs& logs) const {
  if (!logs.contains(monitor_)) return std::nullopt;
  return logs.at(monitor_);
}

void MonitorCallback::warn_once(const std::string& message) {
  if (warned_) return;
  warned_ = true;
  std::cerr << "WARNING: " << message << "\n";
}

std::string joined_names(const models::Logs& logs) {
  std::string names;
  for (const auto& [name, value] : logs) names += (names.empty() ? "" : ",") + name;
  return names;
}

nlohmann::json MonitorCallback::best_to_json() const { return best_ ? nlohmann::json(*best_) : nlohmann::json(); }

void MonitorCallback::best_from_json(const models::CallbackState& state) {
  best_ = state.values.contains("best") && state.values["best"].is_null() ? std::nullopt
                                                                          : std::optional(state.get<double>("best"));
}

}  // namespace chorus::callbacks
