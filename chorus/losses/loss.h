// Loss: Keras's loss objects. call() gives one loss per sample; operator() applies the
// sample weights and the reduction (Keras's default "sum_over_batch_size": the weighted
// sum divided by the number of loss values). Stateless after construction: safe to use
// from several replica threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/core/registry.h"
#include "chorus/core/tensor.h"

namespace chorus::losses {

class Loss {
 public:
  // `reduction` (Keras 3's): "sum_over_batch_size" (the weighted sum / the number of
  // loss values), "mean" (the same), "sum", "mean_with_sample_weight" (the weighted sum
  // / the sum of the weights: a masked-LM loss averaged over its real positions), or
  // "none" (the weighted values, unreduced). Throws ValueError naming the loss otherwise.
  explicit Loss(std::string name, std::string reduction = "sum_over_batch_size");
  virtual ~Loss() = default;

  const std::string& name() const { return name_; }
  const std::string& reduction() const { return reduction_; }

  // The reduced, differentiable loss (a scalar unless reduction is "none"). `sample_weight` (optional) has shape
  // (batch,) or broadcasts against the per-sample losses. Errors name the loss:
  // "sparse_categorical_crossentropy: label 12 out of range [0, 10) at batch element 3".
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) const;

  // Per-sample losses, shape (batch,) (or y_pred's shape minus the last axis).
  virtual Tensor call(const Tensor& y_true, const Tensor& y_pred) const = 0;

  virtual nlohmann::json get_config() const { return {{"name", name_}}; }

  // "mse", "mean_squared_error", "mae", "huber", "binary_crossentropy",
  // "categorical_crossentropy", "sparse_categorical_crossentropy" (Keras's names), or the
  // class name of a registered loss. Throws ValueError listing the known names.
  static std::shared_ptr<Loss> from_name(std::string_view name);
  // {"class_name": "...", "config": get_config()} and back (compile configs in saved
  // models). from_config throws ValueError naming an unknown class.
  virtual nlohmann::json to_config() const = 0;
  static std::shared_ptr<Loss> from_config(const nlohmann::json& config);

 protected:
  // The config keys every loss has: {"name": ..., "reduction": ...}.
  nlohmann::json base_config() const { return {{"name", name_}, {"reduction", reduction_}}; }

 private:
  std::string name_;
  std::string reduction_;
};

// Makes a loss class of the user's known to from_config and from_name (so load_model
// rebuilds a model compiled with it): `factory` receives its get_config(). Registering a
// name again replaces it. Throws ValueError for an empty name or factory.
void register_loss(std::string class_name, Registry<Loss>::Factory factory);
// The registered class names (built-in and the user's), sorted.
std::vector<std::string> registered_losses();

}  // namespace chorus::losses
