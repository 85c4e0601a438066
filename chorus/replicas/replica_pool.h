// ReplicaPool: the threads replicas run on — replica 0 on the thread that calls run(),
// one long-lived thread for each other device — each with its device's share of the
// cores as its intra-op budget, and the in-process communicators that connect them.
// run() hands every replica a function and returns when all are done. Owned by a
// Distribution; run() is called from one thread at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "chorus/comm/communicator.h"
#include "chorus/core/device.h"
#include "chorus/distribution/distribution.h"

namespace chorus::replicas {

class ReplicaPool {
 public:
  // Throws IndexError for a device that does not exist, ValueError for an empty list or
  // a device listed twice.
  explicit ReplicaPool(std::vector<Device> devices);
  ~ReplicaPool();
  ReplicaPool(const ReplicaPool&) = delete;
  ReplicaPool& operator=(const ReplicaPool&) = delete;

  int size() const { return static_cast<int>(devices_.size()); }
  const std::vector<Device>& devices() const { return devices_; }

  // Runs fn(replica) on the threads of replicas 0 .. active-1 (active <= size()) and
  // waits for them. Those replicas' communicators (communicator(r)) form one group of
  // `active` participants for this run. If a replica throws, the group is aborted (the
  // others' collectives fail instead of waiting), and once all have returned the first
  // exception is rethrown — a replica's own error rather than the CollectiveErrors it
  // caused.
  void run(int active, const std::function<void(int replica)>& fn);

  // Replica r's handle in the group of the current run. Only valid inside run().
  comm::Communicator& communicator(int replica) const { return *groups_[static_cast<size_t>(active_)][static_cast<size_t>(replica)]; }

 private:
  void thread_main(int replica);
  void run_job(int replica);

  std::vector<Device> devices_;
  // groups_[k]: the communicators of a group of k replicas, made on first use and
  // remade after an abort.
  std::vector<std::vector<std::unique_ptr<comm::Communicator>>> groups_;
  int active_ = 0;

  // Hand-off: a step takes tens of microseconds on small models, so both sides spin
  // briefly on the atomics before sleeping on the condition variables.
  std::mutex mutex_;
  std::condition_variable work_ready_, work_done_;
  const std::function<void(int)>* job_ = nullptr;
  // (run number << 16) | active replicas, published in one store so a worker never
  // mixes one run's number with another's replica count.
  std::atomic<uint64_t> run_state_{0};
  std::atomic<int> remaining_{0};
  std::atomic<bool> stopping_{false};
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
};

// The replica threads of `distribution`'s local devices, made on first use and shared by
// its clones (Distribution::replica_pool).
std::shared_ptr<ReplicaPool> replica_pool_of(const distribution::Distribution& distribution);

}  // namespace chorus::replicas
