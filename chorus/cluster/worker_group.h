// WorkerGroup: this process's membership in a multi-worker job (DESIGN.md §3,
// "Multi-worker") — the cluster description, the rendezvous store and the Gloo
// communicator that carries gradients, metrics and weights between workers. One per
// process, made by distribution::initialize() and shared by the distributions made after
// it; its collectives are issued by one thread at a time (the trainer's).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "chorus/cluster/cluster.h"
#include "chorus/comm/communicator.h"

namespace gloo::rendezvous {
class Store;
}

namespace chorus::cluster {

class WorkerGroup {
 public:
  // Joins the job `cluster` describes: rank 0 hosts the TCP store (or every rank uses
  // Gloo's FileStore when CHORUS_RENDEZVOUS_DIR names a shared directory), the ranks agree
  // on a random seed for unseeded shuffles, then connect the Gloo communicator. Blocks
  // until every rank has arrived or the connect deadline passes (StoreError /
  // CollectiveError naming the store and the missing ranks). Throws ValueError when a
  // multi-host job would bind a loopback address (set CHORUS_SOCKET_IFNAME or
  // CHORUS_SOCKET_ADDR).
  explicit WorkerGroup(ClusterSpec cluster);
  ~WorkerGroup();
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;

  const ClusterSpec& cluster() const { return cluster_; }
  int rank() const { return cluster_.rank; }
  int size() const { return cluster_.world_size; }
  gloo::rendezvous::Store& store() { return *store_; }
  comm::Communicator& communicator() { return *communicator_; }

  // Runs `write` on rank 0 only; the others wait until it has finished, so no rank reads
  // a file rank 0 is still writing (checkpoints). If rank 0's write throws, it rethrows
  // and every other rank throws IOError saying rank 0 failed.
  void on_chief_then_barrier(const std::function<void()>& write);

  // A new communicator among some participants of the job (a mesh line across workers):
  // this one is `rank` of `size`, and the others call connect() with the same `name`.
  // Thread-safe: each call connects through a store connection of its own, so one
  // process may connect several participants at once (it must, for they wait for all).
  std::unique_ptr<comm::Communicator> connect(const std::string& name, int rank, int size);

  // Rank 0's `value`, returned on every rank: a choice each process would make alone (the
  // seed of fit's shuffle, drawn from its own layer stream) made once for the job. Every
  // rank calls it, in the same order; throws StoreError when rank 0's value does not
  // arrive within the collective deadline.
  uint64_t chief_value(uint64_t value);
  // The same for bytes (the staging directory rank 0 made for a sharded checkpoint).
  std::string chief_bytes(const std::string& value);

 private:
  std::unique_ptr<gloo::rendezvous::Store> open_store(bool serve) const;

  ClusterSpec cluster_;
  std::chrono::milliseconds deadline_;
  int64_t chief_values_ = 0;  // chief_value() calls so far: each one's store key
  std::unique_ptr<gloo::rendezvous::Store> store_;
  std::unique_ptr<comm::Communicator> communicator_;
};

// The address Gloo binds for `cluster`: CHORUS_SOCKET_ADDR, else 127.0.0.1 when every
// worker is on this host, else this host's name. Returns "" when CHORUS_SOCKET_IFNAME
// names the interface instead. Throws ValueError when a multi-host job would bind a
// loopback address.
std::string gloo_bind_address(const ClusterSpec& cluster);

}  // namespace chorus::cluster
