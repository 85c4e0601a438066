// GlooCommunicator: the Communicator across processes and hosts, on Gloo's TCP transport
// (DESIGN.md §3). Collectives run one at a time in issue order (Debian's Gloo is not safe
// for concurrent ops on a context): the async forms go to a background thread and overlap
// with the caller's work; the blocking forms run on the calling thread when nothing is in
// flight. Two Gloo contexts: one in sync mode, where the running thread reads and writes
// the sockets itself, for latency-bound collectives; one on Gloo's event loop for large
// ones. Every collective has a deadline; when a peer dies or stalls, the collective throws
// CollectiveError naming the operation, its sequence number and the ranks that never
// arrived. One communicator per process and stream; use it from one thread at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "chorus/comm/communicator.h"

namespace gloo {
class Context;
}

namespace chorus::comm {

// A rendezvous store that can also answer within a bound of its own (the cluster's TCP
// store): a failed collective's report must not wait out a stalled rank 0, whose process
// serves the store. Gloo's other stores (FileStore) are used through wait() alone.
class BoundedStore : public gloo::rendezvous::Store {
 public:
  using gloo::rendezvous::Store::set;
  virtual void set(const std::string& key, const std::vector<char>& data, std::chrono::milliseconds timeout) = 0;
  // Whether every key is set, answered within `timeout`.
  virtual bool check(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
};

struct GlooOptions {
  // The deadline of every collective: CHORUS_COLLECTIVE_TIMEOUT (seconds) or 300 s.
  std::chrono::milliseconds timeout = std::chrono::seconds(300);
  // The address this process's Gloo device binds: CHORUS_SOCKET_IFNAME's address, or
  // this host's name resolved; tests use "127.0.0.1". Empty: choose as said.
  std::string hostname;
  // Names the communicator's keys in the store, so several streams share one store.
  std::string name = "default";
  // With more than two workers, all_reduce uses Gloo's bcube instead of its ring above
  // this many elements.
  int64_t bcube_above = int64_t{1} << 20;
  // Sync mode (CHORUS_GLOO_SYNC_BYTES; 0: off): collectives on a second Gloo context whose
  // running thread reads and writes the sockets itself, with no event-loop hand-off (a
  // small all-reduce of two local processes: ~26 µs against ~200 µs). Broadcasts and
  // barriers always run there. Gloo's algorithms that send and receive at once (the
  // all-gather ring, the two-worker all-reduce ring) run there only for messages up to
  // this many bytes: beyond, both ends could block writing into full socket buffers;
  // 64 KiB fits Linux's default TCP buffers. (Gloo's sync ring for three or more ranks
  // adds in a different order on each, and replicas must stay identical bit for bit.)
  int64_t sync_max_bytes = int64_t{64} << 10;
  // All-reduces also run in sync mode up to this many bytes moved into one rank, with one
  // writer per connection at a time, which cannot block on full buffers: two workers
  // exchange their tensors (rank 0 sends, then rank 1; 336 KB took 0.17 ms against 0.37 ms
  // on the event loop, two local processes); more gather into rank 0, which adds in rank
  // order and broadcasts. Beyond it the event loop's ring or bcube, which send and
  // receive at once, take over: transfers that long gain little from saved wake-ups.
  int64_t sync_exchange_max_bytes = int64_t{4} << 20;
  // Sync mode spins on its sockets instead of sleeping (CHORUS_GLOO_BUSY_POLL=1): lower
  // latency, but only with a free core per worker.
  bool busy_poll = false;
};

// GlooOptions' sync-mode settings from CHORUS_GLOO_SYNC_BYTES and CHORUS_GLOO_BUSY_POLL
// over `options`. Throws ValueError naming the variable for a malformed value.
GlooOptions gloo_options_from_env(GlooOptions options = {});

class GlooCommunicator : public Communicator {
 public:
  // Connects ranks 0 .. size-1 through `store` as `rank` (blocking until all have arrived
  // or the store's deadline passes). The store must outlive the constructor only. Sets
  // SIGPIPE to be ignored if it has its default action (a closed peer is an error).
  GlooCommunicator(int rank, int size, gloo::rendezvous::Store& store, GlooOptions options = {});
  ~GlooCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "gloo"; }

  std::unique_ptr<Work> all_reduce_async(Buffer buffer, ReduceOp op = ReduceOp::kSum) override;
  std::unique_ptr<Work> broadcast_async(Buffer buffer, int root) override;
  std::unique_ptr<Work> all_gather_async(Buffer input, Buffer output) override;
  std::unique_ptr<Work> reduce_scatter_async(Buffer input, Buffer output, ReduceOp op = ReduceOp::kSum) override;
  std::unique_ptr<Work> barrier_async() override;
  void all_reduce(Buffer buffer, ReduceOp op = ReduceOp::kSum) override;
  void broadcast(Buffer buffer, int root) override;
  void all_gather(Buffer input, Buffer output) override;
  void reduce_scatter(Buffer input, Buffer output, ReduceOp op = ReduceOp::kSum) override;
  void barrier() override;
  // Sizes by Gloo's alltoall, then the buffers by its alltoallv: each byte travels once.
  std::vector<std::vector<std::byte>> all_to_all(const std::vector<std::vector<std::byte>>& send) override;
  void abort(const std::string& reason) override;

 private:
  struct Task;
  using Run = std::function<void()>;
  // The collectives, checked, as work for run_now or enqueue.
  Run make_all_reduce(Buffer buffer, ReduceOp op);
  Run make_broadcast(Buffer buffer, int root);
  Run make_all_gather(Buffer input, Buffer output);
  Run make_reduce_scatter(Buffer input, Buffer output, ReduceOp op);
  Run make_barrier();
  void all_reduce_now(const Buffer& buffer, ReduceOp op);
  // Three or more ranks in sync mode: rank 0 gathers and adds in rank order, then
  // broadcasts. Only rank 0 reads while the others write, so nothing can block for good.
  void reduce_then_broadcast(const Buffer& buffer, ReduceOp op);
  // Two ranks in sync mode: sends `bytes` at `data` to the other rank and returns the
  // bytes it sent this one (in inbox_, valid until the next exchange).
  const void* exchange(const void* data, int64_t bytes);
  // all_to_all of two ranks in sync mode: two exchanges (the sizes, then the buffers).
  // False (nothing received) when the buffers exceed sync_exchange_max_bytes.
  bool all_to_all_two(const std::vector<std::vector<std::byte>>& send, std::vector<std::vector<std::byte>>& received);
  bool sync_fits(int64_t message_bytes) const;

  // Queues `run` as collective `op` on the background thread.
  std::unique_ptr<Work> enqueue(const char* op, Run run);
  // Runs collective `op` on the calling thread when none is queued or running, else
  // queues it; returns when it is done, rethrowing its error.
  void run_now(const char* op, Run run);
  // Runs `task`, fulfilling its promise; `aborted` non-empty fails it at once.
  void execute(Task& task, const std::string& aborted);
  void thread_main();
  [[noreturn]] void fail(const char* op, uint64_t sequence, const std::exception& error);

  int rank_ = 0, size_ = 1;
  GlooOptions options_;
  gloo::rendezvous::Store* store_;  // for failure reports; valid while the job runs
  std::shared_ptr<gloo::Context> context_;       // Gloo's event loop
  std::shared_ptr<gloo::Context> sync_context_;  // sync mode; null when off or alone
  uint64_t issued_ = 0;
  std::vector<uint64_t> inbox_;  // what exchange() received (8-byte words: aligned for every type)

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<Task>> queue_;
  bool running_ = false;  // a collective is running, on either thread
  std::string aborted_;   // non-empty: every later collective fails with this reason
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace chorus::comm
