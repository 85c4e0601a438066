// StepFunctions: how a compiled model runs its train, test and predict steps on the
// batches the Trainer hands it (Keras's make_train_function). DistributedSteps runs them
// eagerly under the model's distribution; a traced, compiled step (jit_compile) is another
// implementation. The model keeps the one made for its compile(); the trainer makes it on
// first use. Used by the thread running fit, evaluate or predict.
#pragma once

#include "chorus/core/tree.h"
#include "chorus/models/logs.h"
#include "chorus/models/worker_input.h"

namespace chorus::cluster {
class WorkerGroup;
}  // namespace chorus::cluster

namespace chorus::models {

class StepFunctions {
 public:
  virtual ~StepFunctions() = default;

  // One step on the global batch `input`. train and test merge every worker's metrics
  // into the model's when `merge_workers` (then their logs are the job's), else only
  // this worker's (and return no logs in a multi-worker job). predict returns the whole
  // batch's outputs in row order on every worker.
  virtual Logs train(const WorkerInput::Step& input, bool merge_workers) = 0;
  virtual Logs test(const WorkerInput::Step& input, bool merge_workers) = 0;
  virtual Tree predict(const Tree& batch) = 0;

  // The workers of a multi-worker job, or nullptr in one process.
  virtual cluster::WorkerGroup* workers() = 0;
  // Multi-worker: whether the steps should merge the workers' metrics after every step —
  // true when any worker asks (`here`), so that every worker merges at the same steps.
  // One process: always true (its merge costs nothing).
  virtual bool merge_every_step(bool here) = 0;
  // Multi-worker: merges every worker's unmerged metric states into the model's, in rank
  // order. Every worker calls it at the same points (epoch and evaluation ends).
  virtual void merge_worker_metrics() = 0;
  // Whether this worker holds metric states not yet merged with the other workers'.
  virtual bool worker_states_pending() const = 0;
  virtual void reset_worker_states() = 0;
  // Before the model is compiled again: a mesh spanning workers gives its variables back
  // whole on every worker (a collective: every worker's compile makes it).
  virtual void release_placement() = 0;
};

}  // namespace chorus::models
