#include "chorus/step/step_context.h"

namespace chorus::step {
namespace {

// The step runtime's one thread-local: each replica runs its step on a thread of its own,
// and the Keras signatures it calls through carry no context (step_context.h).
thread_local const StepContext* t_step = nullptr;

}  // namespace

const StepContext* StepContext::current() { return t_step; }

ReplicaContext* ReplicaContext::current() { return t_step != nullptr ? t_step->replica : nullptr; }

bool GradientAggregator::apply(std::span<const Tensor> grads, std::span<const autograd::IndexedSlices> sparse,
                               std::span<const autograd::Variable> variables,
                               const ReplicaContext::Update& update) const {
  ReplicaContext* replica = t_step != nullptr ? t_step->replica : nullptr;
  if (replica == nullptr) return false;
  replica->apply_gradients(grads, sparse, variables, update);
  return true;
}

StepScope::StepScope(const StepContext* context) : previous_(t_step) { t_step = context; }
StepScope::~StepScope() { t_step = previous_; }

}  // namespace chorus::step
