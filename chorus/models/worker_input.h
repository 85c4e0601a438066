// WorkerInput: the batches this process's steps take from a dataset in fit/evaluate.
// Alone, or in a multi-worker job under DATA sharding, they are the dataset's own global
// batches (the replica runner takes this worker's rows of each). Under FILE sharding
// (data::shard_by_file applies: a text-file pipeline with at least as many files as
// workers) each worker reads its own files and batches its share of the global batch;
// before each step the workers all-reduce whether they still have a batch and how many
// rows, so all take the same number of steps: a worker whose files ran out takes part
// with an empty batch until every worker is done (tf.data's FILE policy, with
// tf.distribute's "has next" agreement). Used by the trainer's thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "chorus/core/tree.h"
#include "chorus/data/dataset.h"

namespace chorus::cluster {
class WorkerGroup;
}

namespace chorus::models {

class WorkerInput {
 public:
  // One step's input.
  struct Step {
    Tree batch;
    // FILE sharding: the rows of the global batch that `batch` (this worker's rows) is
    // part of. nullopt: `batch` is the global batch itself.
    std::optional<int64_t> global_rows;
  };

  // `workers`: the job, or nullptr for this process alone. `model` names errors.
  WorkerInput(const data::Dataset& dataset, cluster::WorkerGroup* workers, std::string model);

  bool file_sharded() const { return file_sharded_; }
  // The dataset this worker iterates (its shard under FILE sharding).
  const data::Dataset& dataset() const { return dataset_; }

  // One pass.
  class Pass {
   public:
    // The next step, or nullopt when the pass has ended (on every worker at once).
    std::optional<Step> next();
    // The pass number this iterates.
    int64_t epoch() const { return epoch_; }
    // Where this worker's iterator stands, and a move there (data::Iterator's).
    data::IteratorPosition position() const { return iterator_.position(); }
    void restore(const data::IteratorPosition& position) { iterator_.restore(position); }

   private:
    friend class WorkerInput;
    Pass(data::Iterator iterator, int64_t epoch, const WorkerInput& input)
        : iterator_(std::move(iterator)), epoch_(epoch), input_(&input) {}
    data::Iterator iterator_;
    int64_t epoch_;
    const WorkerInput* input_;
    Tree empty_;  // zero rows of this worker's last batch: its input once its files ran out
  };
  // A pass over `epoch`; this WorkerInput must outlive it.
  Pass pass(int64_t epoch) const { return Pass(dataset_.iterator(epoch), epoch, *this); }

 private:
  data::Dataset dataset_;
  cluster::WorkerGroup* workers_;
  std::string model_;
  bool file_sharded_ = false;
};

// Rows of a batch: the common first dimension of its arrays (0 for no arrays). Throws
// ShapeError for a scalar and ValueError for arrays with different row counts, naming
// `model`.
int64_t batch_rows(const Tree& batch, const std::string& model);

}  // namespace chorus::models
