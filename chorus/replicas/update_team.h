// UpdateTeam: lends a step's replica threads to replica 0's optimizer update. The other
// replicas would wait at a barrier while replica 0 updates the shared variables; instead
// they serve() and run chunks of its kernels (backend::cpu::LentThreads), so the update's
// loops split across the cores the replicas own. Chunks are fixed by the work, not by who
// runs them, so the results are bit-identical to one thread's. A helper that does not
// come only leaves more chunks to replica 0. Shared by the replicas of one ReplicaRunner.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>

#include "chorus/backend/cpu/parallel.h"

namespace chorus::replicas {

class UpdateTeam final : public backend::cpu::LentThreads {
 public:
  // `size`: the replicas of this process.
  explicit UpdateTeam(int size) : size_(size) {}

  int size() const override { return size_; }
  // Replica 0, inside its update (LentThreadsScope).
  void run(int64_t chunks, const std::function<void(int64_t chunk)>& fn) override;

  // A helper replica: runs chunks of replica 0's jobs until close(step) for this `step`
  // (or a later one) has been called.
  void serve(uint64_t step);
  // Replica 0: the update of `step` is over (also when it failed), releasing the helpers.
  void close(uint64_t step);

 private:
  // Claims and runs chunks of job `job` while any are left.
  void work_on(uint64_t job);

  const int size_;
  // The current job, its chunk count and its next unclaimed chunk (update_team.cc).
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<uint64_t> closed_step_{0};
  const std::function<void(int64_t)>* fn_ = nullptr;  // read only after claiming a chunk
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace chorus::replicas
