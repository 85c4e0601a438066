// Adagrad: Keras's Adagrad (Duchi et al.): per-parameter rates that shrink with the sum
// of squared gradients. One accumulator slot per variable, starting at
// initial_accumulator_value. Not thread-safe (see Optimizer). Runs of 32 elements whose
// gradient is all +0.0 (an embedding table's rows a batch did not touch) are skipped,
// which leaves them exactly as the dense update would (update_kernels.h, AdagradArgs);
// for the same reason a sparse gradient (IndexedSlices) updates only the rows it lists.
//
//   model.compile({.optimizer = Adagrad(0.2)});
#pragma once

#include <optional>

#include "chorus/optimizers/optimizer.h"

namespace chorus::optimizers {

struct AdagradOptions {
  LearningRate learning_rate = 0.001;      // a rate or a schedule (Adagrad likes larger ones)
  double initial_accumulator_value = 0.1;  // >= 0: the accumulators' starting value
  double epsilon = 1e-7;                   // added to the accumulator under the root
  // The base optimizer's arguments (OptimizerOptions), unset by default.
  std::optional<double> weight_decay;
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
};

class Adagrad : public Optimizer {
 public:
  // Throws ValueError if initial_accumulator_value < 0.
  explicit Adagrad(AdagradOptions options = {});
  // Defaults, with this learning rate: `Adagrad(0.2)`.
  explicit Adagrad(LearningRate learning_rate)
      : Adagrad(AdagradOptions{.learning_rate = std::move(learning_rate)}) {}

  double initial_accumulator_value() const { return options_.initial_accumulator_value; }
  double epsilon() const { return options_.epsilon; }
  // The base config plus "initial_accumulator_value" and "epsilon".
  nlohmann::json get_config() const override;

 protected:
  void build_slots(const Variable& variable) override;
  void update_step(const Tensor& grad, const Variable& variable, size_t slot_index, double lr,
                   int64_t step) override;
  // Only the rows the slices list: exactly the dense update's bits, since the dense
  // update leaves a row with a zero gradient as it is (see the header comment).
  void update_step_sparse(const autograd::IndexedSlices& grad, const Variable& variable, size_t slot_index,
                          double lr, int64_t step) override;

 private:
  // A table-shaped gradient buffer for the variable at slot_index, +0.0 between steps.
  Tensor& zeroed_gradient(size_t slot_index, const Variable& variable);

  AdagradOptions options_;  // the learning rate is the base's
  // By slot index: the buffers a small table's sparse gradients are added into (not
  // state: not saved, and all +0.0 whenever no update runs).
  std::vector<Tensor> zeroed_gradients_;
};

}  // namespace chorus::optimizers
