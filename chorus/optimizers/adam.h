// Adam: Keras's Adam (Kingma & Ba), with bias correction folded into the step size and
// optional AMSGrad. Slots per variable: momentum, velocity (and velocity_hat with
// amsgrad). Not thread-safe (see Optimizer).
//
//   Adam adam({.learning_rate = 1e-3, .global_clipnorm = 1.0});
#pragma once

#include <optional>
#include <string>

#include "chorus/optimizers/optimizer.h"

namespace chorus::optimizers {

struct AdamOptions {
  LearningRate learning_rate = 0.001;  // a rate or a schedule
  double beta_1 = 0.9;                 // decay of the first-moment estimate
  double beta_2 = 0.999;               // decay of the second-moment estimate
  double epsilon = 1e-7;               // Keras's "epsilon hat", added to sqrt(v)
  bool amsgrad = false;                // use the running maximum of v (AMSGrad)
  // The base optimizer's arguments (OptimizerOptions), unset by default.
  std::optional<double> weight_decay;
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
};

class Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions options = {}) : Adam("Adam", "adam", std::move(options)) {}
  // Defaults, with this learning rate: `Adam(1e-3)`.
  explicit Adam(LearningRate learning_rate) : Adam(AdamOptions{.learning_rate = std::move(learning_rate)}) {}

  double beta_1() const { return options_.beta_1; }
  double beta_2() const { return options_.beta_2; }
  double epsilon() const { return options_.epsilon; }
  bool amsgrad() const { return options_.amsgrad; }
  // The base config plus "beta_1", "beta_2", "epsilon" and "amsgrad".
  nlohmann::json get_config() const override;

 protected:
  // For AdamW, which is Adam under another name.
  Adam(std::string class_name, std::string name, AdamOptions options);

  void build_slots(const Variable& variable) override;
  void update_step(const Tensor& grad, const Variable& variable, size_t slot_index, double lr,
                   int64_t step) override;

 private:
  AdamOptions options_;  // the learning rate is the base's
};

}  // namespace chorus::optimizers
