// DistributedSteps: a Model's train, test and predict steps under its distribution
// (DESIGN.md §3) — each batch split over the replicas, their metrics (and the workers')
// merged, and the start-up check and rank 0's weights copied to every worker at the first
// step. Without a distribution of several devices each step runs on the calling thread.
// The Model owns one per compile; use it from the thread running fit, evaluate or predict.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "chorus/core/tree.h"
#include "chorus/metrics/metric.h"
#include "chorus/models/logs.h"
#include "chorus/models/worker_input.h"

namespace chorus::distribute {
class MeshRunner;
class StepRunner;
class WorkerGroup;
}  // namespace chorus::distribute

namespace chorus::models {

class Model;

class DistributedSteps {
 public:
  // `model` must outlive this.
  explicit DistributedSteps(Model& model);
  const Model& model() const { return model_; }
  ~DistributedSteps();
  DistributedSteps(const DistributedSteps&) = delete;
  DistributedSteps& operator=(const DistributedSteps&) = delete;

  // One step on the global batch `input`. train and test merge every worker's metrics
  // into the model's when `merge_workers` (then their logs are the job's), else only
  // this worker's (and return no logs in a multi-worker job). predict returns the whole
  // batch's outputs in row order on every worker.
  Logs train(const WorkerInput::Step& input, bool merge_workers);
  Logs test(const WorkerInput::Step& input, bool merge_workers);
  Tree predict(const Tree& batch);

  // The workers of a multi-worker job, or nullptr in one process.
  distribute::WorkerGroup* workers();
  // Multi-worker: whether the steps should merge the workers' metrics after every step —
  // true when any worker asks (`here`), so that every worker merges at the same steps.
  // One process: always true (its merge costs nothing).
  bool merge_every_step(bool here);
  // Multi-worker: merges every worker's unmerged metric states into the model's, in rank
  // order. Every worker calls it at the same points (epoch and evaluation ends).
  void merge_worker_metrics();
  // Whether this worker holds metric states not yet merged with the other workers'.
  bool worker_states_pending() const { return worker_states_pending_; }
  void reset_worker_states();
  // The metrics replica `replica` updates while a step runs there (Model::metrics()
  // inside a replica), or nullptr outside distributed steps.
  const std::vector<std::unique_ptr<metrics::Metric>>* replica_metrics(int replica) const;
  // Before the model is compiled again: a mesh spanning workers gives its variables back
  // whole on every worker (a collective: every worker's compile makes it).
  void release_placement();

 private:
  enum class StepMetrics {
    kNone,        // nothing: predict updates no metrics
    kThisWorker,  // merged into the model's; in a multi-worker job into this worker's unmerged states
    kAllWorkers,  // the same, then every worker's merged into the model's
  };
  // The distribution's step runner, made on first use, or nullptr for one device.
  distribute::StepRunner* step_runner();
  // Runs step(batch slice) on every replica that gets rows, then handles the metrics as
  // `step_metrics` says. Returns the number of replicas that ran.
  int run_replicas(const WorkerInput::Step& input, bool training, StepMetrics step_metrics,
                   const std::function<void(int replica, const Tree& slice)>& step);
  // Model parallelism, once per compile: builds the model and its optimizer state if
  // needed and places every variable on the mesh as the distribution's layouts say.
  void place_on_mesh(distribute::MeshRunner& runner, const Tree& batch);
  // Multi-worker, once per compile: builds the model if needed, checks that every worker
  // has the same model and configuration, and copies rank 0's weights and optimizer
  // state to all; then each keeps its rows of the tables split across the workers.
  void sync_workers(const Tree& batch, int64_t global_rows);
  void split_tables_across_workers(distribute::WorkerGroup& group);

  Model& model_;
  std::unique_ptr<distribute::StepRunner> runner_;
  bool workers_synced_ = false;
  bool placed_on_mesh_ = false;
  bool memory_checked_ = false;  // against CHORUS_DEVICE_MEMORY_LIMIT, at the first train step
  // Per replica: copies of the model's metrics that its steps update.
  std::vector<std::vector<std::unique_ptr<metrics::Metric>>> replica_metrics_;
  // Multi-worker: this worker's metric states (metrics() laid end to end) from the steps
  // not yet merged with the other workers'.
  std::vector<double> unmerged_worker_states_;
  bool worker_states_pending_ = false;
};

}  // namespace chorus::models
