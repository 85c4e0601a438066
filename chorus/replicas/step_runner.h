// StepRunner: what Model needs of whatever runs its steps on several devices — the
// data-parallel ReplicaRunner or the model-parallel MeshRunner. Used by one thread (the
// trainer's) at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace chorus::cluster {
class WorkerGroup;
}  // namespace chorus::cluster
namespace chorus::step {
class ReplicaContext;
}  // namespace chorus::step

namespace chorus::replicas {

class StepRunner {
 public:
  // One replica's part of a step: its context (its id, rows and collectives; the caller
  // makes it part of the step's StepContext) and its rows [begin, end) of the batch.
  using Step = std::function<void(step::ReplicaContext& replica, int64_t begin, int64_t end)>;

  virtual ~StepRunner() = default;

  // The threads that run each step in this process (replica indices 0 .. size-1).
  virtual int num_replicas() const = 0;
  // The multi-worker job, or nullptr for this process alone.
  virtual cluster::WorkerGroup* workers() const = 0;
  // Runs step(replica, begin, end) on the replicas with their rows [begin, end) of the
  // batch and returns how many replicas ran (1 .. num_replicas()). See ReplicaRunner::run.
  virtual int run(int64_t global_rows, std::optional<int64_t> own_rows, bool training,
                  const Step& step) = 0;
  // A batch over the whole job is cut into slices of rows (one per data-parallel replica,
  // or per batch-axis position of a mesh): for each slice in row order, the worker whose
  // replicas compute and report it. Predict's rows are gathered by it.
  virtual std::vector<int> slice_workers() const = 0;
  // Whether replica r's metrics and outputs are to be kept: false where r repeats another
  // replica's rows (the devices of one model-parallel group all compute its outputs).
  virtual bool reports(int /*replica*/) const { return true; }
};

}  // namespace chorus::replicas
