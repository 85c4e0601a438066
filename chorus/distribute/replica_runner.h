// ReplicaRunner: runs the steps of one model data-parallel (DESIGN.md §3). It splits each
// global batch into contiguous per-replica slices (zero-copy views), runs the step on the
// replica threads of a ReplicaPool with a ReplicaContext installed, and owns what lives
// across steps: the gradient buckets, the step counter for random streams. Deferred
// variable updates (BatchNormalization's moving statistics) are applied when a step ends.
// Used by one thread (the trainer's) at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "chorus/distribute/gradient_reducer.h"
#include "chorus/distribute/replica_pool.h"

namespace chorus::distribute {

class ReplicaRunner {
 public:
  explicit ReplicaRunner(std::shared_ptr<ReplicaPool> pool);
  ~ReplicaRunner();

  int num_replicas() const { return pool_->size(); }

  // The slices of `rows` rows over `replicas`: {begin, end} per replica, the first
  // rows % replicas replicas one row longer, so replica 0 is empty only if rows is 0.
  static std::vector<std::pair<int64_t, int64_t>> split(int64_t rows, int replicas);

  // Runs step(replica, begin, end) for every replica with a non-empty slice of
  // `global_rows`; replicas without rows sit the step out (the reduction is among those
  // that have rows, so it stays exact). Returns the number of replicas that ran. Rethrows
  // a replica's exception after all have stopped.
  int run(int64_t global_rows, const std::function<void(int replica, int64_t begin, int64_t end)>& step);

 private:
  class Context;

  std::shared_ptr<ReplicaPool> pool_;
  GradientReducer reducer_;
  uint64_t steps_ = 0;
  std::vector<std::unique_ptr<Context>> contexts_;
};

}  // namespace chorus::distribute
