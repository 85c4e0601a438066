// SGD: Keras's gradient descent with optional (Nesterov) momentum. One momentum slot per
// variable when momentum > 0. Not thread-safe (see Optimizer).
//
//   SGD sgd({.learning_rate = 0.1, .momentum = 0.9, .nesterov = true});
#pragma once

#include <optional>

#include "chorus/optimizers/optimizer.h"

namespace chorus::optimizers {

struct SGDOptions {
  LearningRate learning_rate = 0.01;  // a rate or a schedule
  double momentum = 0.0;              // in [0, 1]; 0 is plain gradient descent (no slot)
  bool nesterov = false;              // Nesterov momentum (only with momentum > 0)
  // The base optimizer's arguments (OptimizerOptions), unset by default.
  std::optional<double> weight_decay;
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
};

class SGD : public Optimizer {
 public:
  // Throws ValueError unless momentum is in [0, 1] (and see Optimizer's constructor).
  explicit SGD(SGDOptions options = {});
  // Defaults, with this learning rate: `SGD(0.1)`.
  explicit SGD(LearningRate learning_rate) : SGD(SGDOptions{.learning_rate = std::move(learning_rate)}) {}

  double momentum() const { return options_.momentum; }
  bool nesterov() const { return options_.nesterov; }
  // The base config plus "momentum" and "nesterov".
  nlohmann::json get_config() const override;

 protected:
  void build_slots(const Variable& variable) override;
  void update_step(const Tensor& grad, const Variable& variable, size_t slot_index, double lr,
                   int64_t step) override;
  // Without momentum only the gradient's rows are updated, with the dense update's bits:
  // a row with a zero gradient keeps its value. Momentum decays every row's velocity, so
  // it takes the dense update, as Keras does.
  void update_step_sparse(const autograd::IndexedSlices& grad, const Variable& variable, size_t slot_index, double lr,
                          int64_t step) override;

 private:
  SGDOptions options_;  // the learning rate is the base's
};

}  // namespace chorus::optimizers
