// StepContext: the state of one train, test or predict step as one replica runs it, in
// one value: the replica and its rows of the global batch (nullptr on one device) and the
// metrics the step updates. models::DistributedSteps makes one for each replica of each
// step and installs it (StepScope) on the thread running that replica for the step's
// duration. Not shared between threads; the value outlives the step it describes.
#pragma once

#include <memory>
#include <span>

#include "chorus/step/replica_context.h"

namespace chorus::metrics {
class Metric;
}  // namespace chorus::metrics

namespace chorus::step {

struct StepContext {
  // The replica running the step: its rows, the gradient reduction its optimizer update
  // goes through (ReplicaContext::apply_gradients), its collectives. nullptr: one device.
  ReplicaContext* replica = nullptr;
  // The metrics this step updates (Model::metrics()): inside a replica, its own copies,
  // merged into the model's after the step (tf.distribute's sync-on-read metrics). Empty:
  // the model's own.
  std::span<const std::unique_ptr<metrics::Metric>> metrics;

  // The step running on the calling thread, or nullptr outside one. Keras's
  // train_step(data) and call(inputs, training) carry no context, so what they call —
  // Model's default steps and metrics(), the optimizer's GradientAggregator, Dropout,
  // BatchNormalization, DistributedEmbedding, a user's train_step through
  // ReplicaContext::current() — reads the step's value here and nowhere else.
  static const StepContext* current();
};

// Where an optimizer's apply_gradients sends its gradients under a distribution
// (tf.distribute's merge_call): Model::compile gives the optimizer one when it compiles
// under a distribution, so that a custom train_step's apply_gradients reduces too.
// Stateless; thread-safe.
class GradientAggregator {
 public:
  // Inside a replica step (StepContext::current() has a replica): hands the gradients to
  // that replica, which reduces them across replicas and runs `update` once with the
  // result (ReplicaContext::apply_gradients), and returns true. Elsewhere returns false:
  // the caller updates alone.
  bool apply(std::span<const Tensor> grads, std::span<const autograd::IndexedSlices> sparse,
             std::span<const autograd::Variable> variables, const ReplicaContext::Update& update) const;
};

// Installs `context` as the calling thread's step for this scope's lifetime, restoring
// the previous one after (a fit started inside a step's callback nests).
class [[nodiscard]] StepScope {
 public:
  explicit StepScope(const StepContext* context);
  ~StepScope();
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;

 private:
  const StepContext* previous_;
};

}  // namespace chorus::step
