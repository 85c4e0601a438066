// GlooCommunicator: the Communicator across processes and hosts, on Gloo's TCP transport
// (DESIGN.md §3). One Gloo context per communicator, driven by one background thread that
// runs the collectives in issue order (Debian's Gloo is not safe for concurrent ops on a
// context): the async forms return at once and overlap with the caller's work. Every
// collective has a deadline; when a peer dies or stalls, wait() throws CollectiveError
// naming the operation, its sequence number and the ranks that never arrived. One
// communicator per process and stream; use it from one thread at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <gloo/rendezvous/store.h>

#include "chorus/distribute/cluster.h"
#include "chorus/distribute/communicator.h"

namespace gloo {
class Context;
}

namespace chorus::distribute {

struct GlooOptions {
  // The deadline of every collective: CHORUS_COLLECTIVE_TIMEOUT (seconds) or 300 s.
  std::chrono::milliseconds timeout = std::chrono::seconds(300);
  // The address this process's Gloo device binds: CHORUS_SOCKET_IFNAME's address, or
  // this host's name resolved; tests use "127.0.0.1". Empty: choose as said.
  std::string hostname;
  // Names the communicator's keys in the store, so several streams share one store.
  std::string name = "default";
  // With more than two workers, all_reduce uses Gloo's bcube instead of its ring above
  // this many floats.
  int64_t bcube_above = int64_t{1} << 20;
};

class GlooCommunicator : public Communicator {
 public:
  // Connects every rank of `cluster` through `store` (blocking until all have arrived or
  // the store's deadline passes). The store must outlive the constructor only.
  GlooCommunicator(const ClusterSpec& cluster, gloo::rendezvous::Store& store, GlooOptions options = {});
  ~GlooCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "gloo"; }

  std::unique_ptr<Work> all_reduce_async(Tensor tensor, ReduceOp op = ReduceOp::kSum) override;
  std::unique_ptr<Work> broadcast_async(Tensor tensor, int root) override;
  std::unique_ptr<Work> all_gather_async(Tensor input, Tensor output) override;
  std::unique_ptr<Work> reduce_scatter_async(Tensor input, Tensor output, ReduceOp op = ReduceOp::kSum) override;
  std::unique_ptr<Work> barrier_async() override;
  void abort(const std::string& reason) override;

 private:
  struct Task;
  // Queues `run` as collective `op` on the background thread.
  std::unique_ptr<Work> enqueue(const char* op, std::function<void()> run);
  void thread_main();
  [[noreturn]] void fail(const char* op, uint64_t sequence, const std::exception& error);

  int rank_ = 0, size_ = 1;
  GlooOptions options_;
  gloo::rendezvous::Store* store_;  // for failure reports; valid while the job runs
  std::shared_ptr<gloo::Context> context_;
  uint64_t issued_ = 0;

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<Task>> queue_;
  std::string aborted_;  // non-empty: every later collective fails with this reason
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace chorus::distribute
