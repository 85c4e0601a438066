// Metric: a mergeable running statistic (Keras's metrics). Its state is a few doubles
// (e.g. total and count) that replicas and workers add together with merge_state(), so
// a merged result is exact. One instance per thread; clone() makes a fresh one with the
// same configuration for another replica.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/core/registry.h"
#include "chorus/core/tensor.h"

namespace chorus::metrics {

class Metric {
 public:
  Metric(std::string name, size_t state_size) : state_(state_size, 0.0), name_(std::move(name)) {}
  virtual ~Metric() = default;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // Accumulates a batch. Reads tensors directly (never records on a tape).
  virtual void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) = 0;
  // The current value (0 when nothing was accumulated, as Keras's divide_no_nan).
  virtual double result() const = 0;
  void reset_state() { std::fill(state_.begin(), state_.end(), 0.0); }

  // The accumulated state; merge_state adds another instance's state to this one.
  // Throws ValueError if the sizes differ.
  std::span<const double> state() const { return state_; }
  void merge_state(std::span<const double> other);

  virtual std::unique_ptr<Metric> clone() const = 0;
  virtual nlohmann::json get_config() const { return {{"name", name_}}; }

  // Keras's names: "accuracy"/"acc", "binary_accuracy", "categorical_accuracy",
  // "sparse_categorical_accuracy", "top_k_categorical_accuracy",
  // "sparse_top_k_categorical_accuracy", "mse"/"mean_squared_error", "mae". "accuracy"
  // gives an Accuracy whose kind is settled by the first batch's shapes (Keras's compile
  // rule: sparse labels → sparse_categorical, one output unit → binary, else categorical);
  // or the class name of a registered metric.
  static std::shared_ptr<Metric> from_name(std::string_view name);
  // {"class_name": "...", "config": get_config()} and back (compile configs in saved
  // models). from_config throws ValueError naming an unknown class.
  virtual nlohmann::json to_config() const = 0;
  static std::shared_ptr<Metric> from_config(const nlohmann::json& config);

 protected:
  std::vector<double> state_;

 private:
  std::string name_;
};

// Makes a metric class of the user's known to from_config and from_name (so load_model
// rebuilds a model compiled with it): `factory` receives its get_config(). Registering a
// name again replaces it. Throws ValueError for an empty name or factory.
void register_metric(std::string class_name, Registry<Metric>::Factory factory);
// The registered class names (built-in and the user's), sorted.
std::vector<std::string> registered_metrics();

}  // namespace chorus::metrics
