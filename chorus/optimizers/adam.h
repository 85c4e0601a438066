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

  double beta_1() const { return beta_1_; }
  double beta_2() const { return beta_2_; }
  double epsilon() const { return epsilon_; }
  bool amsgrad() const { return amsgrad_; }
  // The base config plus "beta_1", "beta_2", "epsilon" and "amsgrad".
  nlohmann::json get_config() const override;

 protected:
  // For AdamW, which is Adam under another name.
  Adam(std::string class_name, std::string name, AdamOptions options);

  void build_slots(const Variable& variable) override;
  void update_step(const Tensor& grad, const Variable& variable, size_t slot_index, double lr,
                   int64_t step) override;

 private:
  double beta_1_;
  double beta_2_;
  double epsilon_;
  bool amsgrad_;
};

}  // namespace chorus::optimizers
