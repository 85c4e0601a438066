// MeshRunner: runs a model's steps under ModelParallel (DESIGN.md §3). One thread per mesh
// device runs every step (SPMD): the devices of a batch-axis position share that position's
// rows of the batch, each holding its blocks of the sharded variables (place()) and a copy
// of the replicated ones; the ops exchange activations along the model axes as the
// layouts require (ops/sharded_ops.h). At apply_gradients each device all-reduces its
// gradients over the batch axis and updates its own values and optimizer state, which
// follow their variable's layout. A variable split over the batch axis itself (fully
// sharded data parallelism) is gathered whole for each step (GatheredVariables) and its
// gradient reduce-scattered to the device's rows as backward produces it. In a
// multi-worker job, either every worker holds the same mesh of its own devices — the model
// axes stay within a worker and the batch axis continues across the workers (a (1, 2) mesh
// on each of 2 workers trains as (2, 2)), the gradients then summed over the workers too —
// or the mesh holds every device of the job and spans the workers: each worker runs its
// devices, and a line of devices along an axis that crosses workers talks over Gloo. Used
// by one thread (the trainer's) at a time.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "chorus/autograd/variable.h"
#include "chorus/comm/communicator.h"
#include "chorus/distribution/model_parallel.h"
#include "chorus/replicas/replica_pool.h"
#include "chorus/replicas/step_runner.h"

namespace chorus::replicas {

class MeshRunner : public StepRunner {
 public:
  explicit MeshRunner(std::shared_ptr<const distribution::ModelParallel> distribution);
  ~MeshRunner() override;

  const distribution::ModelParallel& distribution() const { return *distribution_; }
  int num_replicas() const override { return pool_->size(); }
  cluster::WorkerGroup* workers() const override { return workers_.get(); }
  std::vector<int> slice_workers() const override;
  // Positions along the batch axis over the whole job.
  int batch_positions() const;
  // Whether every worker holds the same mesh of its own devices and the batch axis goes on
  // over the workers (rather than a mesh spanning them).
  bool batch_continues_across_workers() const;
  int run(int64_t global_rows, std::optional<int64_t> own_rows, bool training,
          const Step& step) override;
  // Only the first device along every axis but the batch axis reports.
  bool reports(int replica) const override;

  // Keeps `variable` on the devices from now on as `placement` says: its block on each
  // device where sharded, a copy on each where replicated.
  void place(const autograd::Variable& variable, const distribution::VariablePlacement& placement);
  // ZeRO stage 1 for a replicated `variable` whose optimizer state was placed split over
  // the batch axis by rows: each device updates its rows, then gathers the others'.
  void update_by_rows(const autograd::Variable& variable) { updated_by_rows_.insert(variable.path()); }

  // Whether a trainable variable is split over the batch axis (fully sharded): every
  // device then gathers and reduces along that axis with the others as the step runs, so
  // a device without rows of a training batch runs the step too (on a row it then weighs
  // zero).
  bool shards_over_batch_axis() const;
  // Whether the mesh holds the devices of several workers (each runs only its own).
  bool spans_workers() const { return spans_workers_; }
  // The variables place() keeps on the devices.
  const std::vector<autograd::Variable>& placed() const { return placed_; }

 private:
  class Context;
  void make_communicators();

  // Device 0 sums the batch-axis position 0 devices' gradients over the workers, for
  // every device of its model group to read.
  void reduce_across_workers(int device, std::vector<Tensor>& grads);

  std::shared_ptr<const distribution::ModelParallel> distribution_;
  std::shared_ptr<cluster::WorkerGroup> workers_;
  std::shared_ptr<ReplicaPool> pool_;
  bool spans_workers_ = false;
  int batch_size_ = 1;  // the mesh's positions along the batch axis
  std::vector<std::vector<Tensor>> staged_;  // [device]: gradients handed over for reduce_across_workers
  std::vector<std::vector<int>> positions_;  // [position in the mesh][axis]
  std::vector<int> position_workers_;        // [position in the mesh]: the worker that runs it
  std::vector<std::vector<int>> coordinates_;                      // [device][axis]
  std::vector<std::vector<std::unique_ptr<comm::Communicator>>> comms_;  // [axis][device]
  bool comms_broken_ = false;
  std::vector<std::unique_ptr<Context>> contexts_;
  std::vector<autograd::Variable> placed_;
  std::set<std::string> updated_by_rows_;  // variable paths
  uint64_t steps_ = 0;
};

}  // namespace chorus::replicas
