// DistributedSteps: a Model's train, test and predict steps under its distribution
// (DESIGN.md §3) — each batch split over the replicas, their metrics (and the workers')
// merged, and the start-up check and rank 0's weights copied to every worker at the first
// step. Without a distribution of several devices each step runs on the calling thread.
// The Model keeps one per compile (StepFunctions); use it from the thread running fit,
// evaluate or predict.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "chorus/core/tree.h"
#include "chorus/metrics/metric.h"
#include "chorus/models/logs.h"
#include "chorus/models/step_functions.h"
#include "chorus/models/worker_input.h"

namespace chorus::replicas {
class MeshRunner;
class StepRunner;
}  // namespace chorus::replicas
namespace chorus::cluster {
class WorkerGroup;
}  // namespace chorus::cluster

namespace chorus::models {

class Model;

class DistributedSteps final : public StepFunctions {
 public:
  // `model` must outlive this.
  explicit DistributedSteps(Model& model);
  ~DistributedSteps() override;
  DistributedSteps(const DistributedSteps&) = delete;
  DistributedSteps& operator=(const DistributedSteps&) = delete;

  // StepFunctions, as documented there.
  Logs train(const WorkerInput::Step& input, bool merge_workers) override;
  Logs test(const WorkerInput::Step& input, bool merge_workers) override;
  Tree predict(const Tree& batch) override;
  cluster::WorkerGroup* workers() override;
  bool merge_every_step(bool here) override;
  void merge_worker_metrics() override;
  bool worker_states_pending() const override { return worker_states_pending_; }
  void reset_worker_states() override;
  void release_placement() override;

 private:
  enum class StepMetrics {
    kNone,        // nothing: predict updates no metrics
    kThisWorker,  // merged into the model's; in a multi-worker job into this worker's unmerged states
    kAllWorkers,  // the same, then every worker's merged into the model's
  };
  // The distribution's step runner, made on first use, or nullptr for one device.
  replicas::StepRunner* step_runner();
  // Runs step(batch slice) on every replica that gets rows, then handles the metrics as
  // `step_metrics` says. Returns the number of replicas that ran.
  int run_replicas(const WorkerInput::Step& input, bool training, StepMetrics step_metrics,
                   const std::function<void(int replica, const Tree& slice)>& step);
  // Model parallelism, once per compile: builds the model and its optimizer state if
  // needed and places every variable on the mesh as the distribution's layouts say.
  void place_on_mesh(replicas::MeshRunner& runner, const Tree& batch);
  // Multi-worker, once per compile: builds the model if needed, checks that every worker
  // has the same model and configuration, and copies rank 0's weights and optimizer
  // state to all; then each keeps its rows of the tables split across the workers.
  void sync_workers(const Tree& batch, int64_t global_rows);
  void split_tables_across_workers(cluster::WorkerGroup& group);

  Model& model_;
  std::unique_ptr<replicas::StepRunner> runner_;
  bool workers_synced_ = false;
  bool placed_on_mesh_ = false;
  bool memory_checked_ = false;  // against CHORUS_DEVICE_MEMORY_LIMIT, at the first train step
  // Per replica: copies of the model's metrics that its steps update (its StepContext's).
  std::vector<std::vector<std::unique_ptr<metrics::Metric>>> replica_metrics_;
  // Multi-worker: this worker's metric states (metrics() laid end to end) from the steps
  // not yet merged with the other workers'.
  std::vector<double> unmerged_worker_states_;
  bool worker_states_pending_ = false;
};

}  // namespace chorus::models
