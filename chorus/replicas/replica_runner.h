// ReplicaRunner: runs the steps of one model data-parallel (DESIGN.md §3). It splits each
// global batch into contiguous per-replica slices (zero-copy views), runs the step on the
// replica threads of a ReplicaPool with a ReplicaContext installed, and owns what lives
// across steps: the gradient buckets, the step counter for random streams, and the team
// through which the other replicas lend their threads to replica 0's optimizer update. Deferred
// variable updates (BatchNormalization's moving statistics) are applied when a step ends.
// In a multi-worker job every worker runs the same global batches and its replicas take
// their rows of each: global replica w * local + r gets the w * local + r-th slice; or
// (FILE sharding) each worker runs its own rows of the global batch, split over its replicas.
// Used by one thread (the trainer's) at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "chorus/replicas/gradient_reducer.h"
#include "chorus/replicas/replica_pool.h"
#include "chorus/replicas/step_runner.h"
#include "chorus/replicas/update_team.h"

namespace chorus::replicas {

class ReplicaRunner : public StepRunner {
 public:
  // `workers`: the multi-worker job the replicas belong to, or nullptr for this process alone.
  explicit ReplicaRunner(std::shared_ptr<ReplicaPool> pool, std::shared_ptr<cluster::WorkerGroup> workers = nullptr);
  ~ReplicaRunner() override;

  // Replicas of this process.
  int num_replicas() const override { return pool_->size(); }
  int num_workers() const;
  cluster::WorkerGroup* workers() const override { return workers_.get(); }
  std::vector<int> slice_workers() const override;

  // The slices of `rows` rows over `replicas`: {begin, end} per replica, the first
  // rows % replicas replicas one row longer, so replica 0 is empty only if rows is 0.
  static std::vector<std::pair<int64_t, int64_t>> split(int64_t rows, int replicas);

  // Runs step(replica, begin, end) for every local replica with a non-empty slice of
  // `global_rows` (rows of the global batch); replicas without rows sit the step out (the
  // reduction is among those that have rows, so it stays exact). Replica 0 always runs —
  // with an empty slice when this worker gets no rows, so that it still joins the
  // workers' collectives. Returns the number of replicas that ran. Rethrows a replica's
  // exception after all have stopped.
  // `training`: a train step (its deferred assigns are kept as the pattern a worker
  // without rows follows).
  // `own_rows`: the batch holds this worker's `own_rows` rows only (FILE sharding), split
  // over the local replicas; nullopt: it is the global batch.
  int run(int64_t global_rows, std::optional<int64_t> own_rows, bool training,
          const Step& step) override;

 private:
  class Context;
  void apply_assigns(int active, int64_t global_rows, bool training);

  std::shared_ptr<ReplicaPool> pool_;
  std::shared_ptr<cluster::WorkerGroup> workers_;
  GradientReducer reducer_;
  UpdateTeam team_;  // the replicas lend their threads to replica 0's update
  uint64_t steps_ = 0;
  std::vector<std::unique_ptr<Context>> contexts_;
  std::vector<autograd::Variable> assigned_;  // the deferred assigns of the last training step
};

}  // namespace chorus::replicas
