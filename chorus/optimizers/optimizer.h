// Optimizer: Keras's optimizer base. build() makes the slots for a list of variables,
// apply_gradients() clips, decays and then runs update_step() — one fused pass over each
// variable's memory. Its state (iterations and slots) is a list of Variables that
// checkpoints save and restore. Not thread-safe: one update at a time (the trainer's
// single update point after the gradient reduction).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/autograd/indexed_slices.h"
#include "chorus/autograd/variable.h"
#include "chorus/core/registry.h"
#include "chorus/optimizers/learning_rate.h"

namespace chorus::step {
class GradientAggregator;
}  // namespace chorus::step

namespace chorus::optimizers {

using autograd::Variable;

// The arguments every Keras optimizer takes besides its own.
struct OptimizerOptions {
  std::optional<double> weight_decay;     // decoupled: var -= lr * wd * var before the step
  std::optional<double> clipnorm;         // clips each gradient's L2 norm
  std::optional<double> clipvalue;        // clips each gradient element to [-v, v]
  std::optional<double> global_clipnorm;  // clips the norm of all gradients together
};

class Optimizer {
 public:
  // `class_name` is Keras's ("Adam"); `name` its lower-case name ("adam"). Throws
  // ValueError when more than one of clipnorm, clipvalue and global_clipnorm is set.
  Optimizer(std::string class_name, std::string name, LearningRate learning_rate, OptimizerOptions options);
  virtual ~Optimizer() = default;

  const std::string& name() const { return name_; }
  const std::string& class_name() const { return class_name_; }

  // Creates the slots for `variables` (called once, by the first apply_gradients if
  // not before). Throws ValueError if called again with different variables, or given
  // one variable twice; DTypeError for a variable that is not float32 (bfloat16
  // variables are not supported yet).
  void build(std::span<const Variable> variables);
  bool built() const { return built_; }

  // One optimizer step: grads[i] updates variables[i]; an undefined gradient leaves its
  // variable unchanged (Keras skips None). Throws ShapeError naming the variable when a
  // gradient's shape differs, DTypeError for a gradient that is not float32, and
  // ValueError when the counts differ, a variable is not one build() saw, or every
  // gradient is undefined (Keras's "No gradients provided for any variable").
  // (Two of clipnorm, clipvalue and global_clipnorm together are refused by the
  // constructor, as in Keras.)
  void apply_gradients(std::span<const Tensor> grads, std::span<const Variable> variables);
  // The same, where some gradients are IndexedSlices (GradientTape's sparse gradients):
  // where sparse[i] is defined it is variables[i]'s gradient, and grads[i] must be
  // undefined. Adagrad updates only the rows listed, with the dense update's bits; other
  // optimizers, clipping, and the reduction across data-parallel replicas use the dense
  // equivalent (to_dense()). Throws as above; ValueError when both forms are given for one
  // variable or the slices are malformed, IndexError for a row outside the variable.
  void apply_gradients(std::span<const Tensor> grads, std::span<const Variable> variables,
                       std::span<const autograd::IndexedSlices> sparse);
  // Where apply_gradients sends the gradients of a distributed step to be reduced across
  // replicas before the one update (Model::compile sets it under a distribution; null:
  // every call updates at once).
  void set_gradient_aggregator(std::shared_ptr<const step::GradientAggregator> aggregator) {
    aggregator_ = std::move(aggregator);
  }

  // The slots build() made for `variable` (empty when it is not one of the built variables).
  std::vector<Variable> slots_of(const Variable& variable) const;
  // The number of steps taken (Keras's `iterations`).
  int64_t iterations() const;
  // The learning rate the next step uses (the schedule's value at iterations()).
  double learning_rate() const;
  // Sets a constant rate (LearningRateScheduler, ReduceLROnPlateau). Throws ValueError
  // when the rate is a schedule, as Keras does.
  void set_learning_rate(double value);
  const LearningRate& learning_rate_spec() const { return learning_rate_; }

  // iterations first, then the slots in build order; paths "optimizer/iterations",
  // "optimizer/<variable path>/<slot>". Empty slots before build().
  std::vector<Variable> variables() const;

  // {"name", "learning_rate" (a number or a schedule's config), the options, and the
  // optimizer's own arguments}.
  virtual nlohmann::json get_config() const;

  // "sgd", "adam", "adamw", "adagrad", "rmsprop" (any case) with Keras's defaults, or the
  // class name of a registered optimizer. Throws ValueError listing them for any other name.
  static std::shared_ptr<Optimizer> from_name(std::string_view name);
  // Rebuilds an optimizer from get_config()'s output (with "class_name" added by
  // to_config). Throws ValueError naming an unknown class.
  static std::shared_ptr<Optimizer> from_config(const nlohmann::json& config);
  // {"class_name": "Adam", "config": get_config()}.
  nlohmann::json to_config() const;

 protected:
  // Creates this optimizer's slots for one variable with add_slot().
  virtual void build_slots(const Variable& variable) = 0;
  // Updates one variable from its (already clipped) gradient in one pass. `slot_index`
  // is the variable's index in build order; `step` counts from 1 (Adam's bias
  // correction).
  virtual void update_step(const Tensor& grad, const Variable& variable, size_t slot_index, double lr,
                           int64_t step) = 0;
  // The same from a sparse gradient (its shape and indices checked). By default the
  // dense update of grad.to_dense(); an optimizer whose update leaves a row with a zero
  // gradient as it is overrides it to touch only the rows listed (SparseRows).
  virtual void update_step_sparse(const autograd::IndexedSlices& grad, const Variable& variable, size_t slot_index,
                                  double lr, int64_t step) {
    update_step(grad.to_dense(), variable, slot_index, lr, step);
  }
  // A slot of `variable` named `slot`, filled with `initial_value`.
  Variable add_slot(const Variable& variable, const std::string& slot, double initial_value);
  // The slots of variable `slot_index`, in the order build_slots added them.
  const std::vector<Variable>& slots(size_t slot_index) const { return slots_[slot_index]; }
  const OptimizerOptions& options() const { return options_; }

 private:
  // apply_gradients' update once the gradients are final (reduced across replicas, if any).
  void update(std::span<const Tensor> grads, std::span<const Variable> variables,
              std::span<const autograd::IndexedSlices> sparse);
  // Replaces grads with clipped copies as options_ ask (at most one kind is set).
  // `shard_axes[j]`: the mesh axis grads[j] is a block along (model parallelism: norms
  // add up over it), or -1 for a whole gradient.
  void clip_gradients(std::vector<Tensor>& grads, const std::vector<int>& shard_axes) const;

  std::string class_name_;
  std::string name_;
  LearningRate learning_rate_;
  OptimizerOptions options_;
  Variable iterations_;
  bool built_ = false;
  // The variables build() saw, in order, and their indices by identity (their value's
  // TensorImpl) for apply_gradients calls that pass a subset or another order.
  std::vector<Variable> built_variables_;
  std::unordered_map<const void*, size_t> index_of_;  // by Variable::id()
  std::vector<std::vector<Variable>> slots_;
  std::vector<Variable> all_slots_;
  std::shared_ptr<const step::GradientAggregator> aggregator_;
};

// Makes an optimizer class of the user's known to from_config and from_name (so
// load_model rebuilds a model compiled with it): `factory` receives its get_config().
// Registering a name again replaces it. Throws ValueError for an empty name or factory.
void register_optimizer(std::string class_name, Registry<Optimizer>::Factory factory);
// The registered class names (built-in and the user's), sorted.
std::vector<std::string> registered_optimizers();

}  // namespace chorus::optimizers
