// LaunchRendezvous: how the launchers of one job — one `chorus launch` per host — agree
// on each attempt's hosts through the rendezvous store that node 0's launcher hosts for
// the whole job, across restarts (torchrun's agent store and rendezvous rounds). Used by
// launch() from one thread.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chorus/cluster/tcp_store.h"
#include "chorus/cluster/tcp_store_server.h"

namespace chorus::cluster {

struct LaunchOptions;

// The hosts of one attempt: their node ranks in order. A host's workers take ranks
// index * nproc_per_node + local rank, where index is its place in `nodes`.
struct LaunchRound {
  int attempt = 0;
  std::vector<int> nodes;
  int index = 0;  // this host's place in `nodes`
};

class LaunchRendezvous {
 public:
  // Node 0 starts the store on host:port; every node connects to it as `job_id`.
  // Throws StoreError if node 0 cannot listen or another node cannot reach it.
  LaunchRendezvous(const LaunchOptions& options, const std::string& host, int port, const std::string& job_id);
  ~LaunchRendezvous();

  // Joins attempt `attempt` and waits for its hosts. Node 0 closes the round when all
  // nnodes hosts joined, or min_nnodes did and `last_call` passed without the rest.
  // Returns nullopt if this host joined after the round closed without it. Throws Error
  // if too few hosts join within join_timeout.
  std::optional<LaunchRound> join(int attempt);

  // Tells the other hosts that a worker of `attempt` failed, so their launchers stop
  // theirs (after survivor_wait) and restart. Never throws: the store may be gone.
  void report_failure(int attempt);
  // Whether another host reported a failure in `attempt`. Returns false, and stops
  // asking, once the store cannot be reached (node 0's launcher ended).
  bool failure_reported(int attempt);

 private:
  std::vector<int> close_round(int attempt);

  const LaunchOptions& options_;
  std::unique_ptr<TcpStoreServer> server_;  // node 0 only
  std::unique_ptr<TcpStore> store_;
  bool store_lost_ = false;
};

}  // namespace chorus::cluster
