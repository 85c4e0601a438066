// TcpStore: the rendezvous key-value store of a multi-worker job, a
// gloo::rendezvous::Store over TCP (Debian's Gloo has none). Its server (TcpStoreServer)
// listens on the cluster's master address, hosted by rank 0 or by `chorus launch`; every
// rank talks to it as a client. get() and wait() block until the keys are set or the
// deadline passes. The job id is checked when a client connects, so two jobs (or two
// attempts of one job) never cross. Thread-safe: requests from several threads take turns.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "chorus/cluster/cluster.h"
#include "chorus/cluster/tcp_store_server.h"
#include "chorus/comm/gloo_communicator.h"
#include "chorus/core/error.h"

namespace chorus::cluster {

struct TcpStoreOptions {
  // Deadline of get() and wait() without an explicit timeout.
  std::chrono::milliseconds timeout = std::chrono::seconds(300);
  // How long a client retries connecting (with backoff) before giving up: a worker that
  // starts before rank 0 still joins.
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(60);
  // Connect only, even on rank 0: another connection to a store this process serves.
  bool client_only = false;
};

class TcpStore : public comm::BoundedStore {
 public:
  // Rank 0 starts the server on cluster.master_addr:master_port (throws StoreError if the
  // port is taken, naming it) unless the launcher hosts it (cluster.store_on_launcher);
  // every rank then connects. REQUIRES: cluster.master_addr and master_port set
  // (ValueError otherwise).
  explicit TcpStore(const ClusterSpec& cluster, TcpStoreOptions options = {});
  // A client of the server at host:port, as `job_id` (a launcher's own connection).
  TcpStore(const std::string& host, int port, std::string job_id, TcpStoreOptions options = {});
  ~TcpStore() override;
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

  // Whether every key is set now (never blocks).
  bool check(const std::vector<std::string>& keys);
  // set() and check() within `timeout` rather than the store's: a failure report must not
  // wait out a stalled rank 0 (whose process serves the store).
  void set(const std::string& key, const std::vector<char>& data, std::chrono::milliseconds timeout) override;
  bool check(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

  const std::string& address() const { return address_; }

 private:
  void connect(const std::string& host, int port);
  // Sends one request and reads its reply within `timeout`; returns the reply's payload.
  std::vector<char> request(uint8_t op, const std::vector<std::string>& keys, const std::vector<char>& data,
                            std::chrono::milliseconds timeout, const char* what);

  TcpStoreOptions options_;
  std::string address_;  // "host:port", for messages
  std::string job_id_;
  std::string host_ = "rank 0";  // who serves the store, for messages
  std::unique_ptr<TcpStoreServer> server_;
  std::mutex mutex_;
  int fd_ = -1;
  bool broken_ = false;  // a request timed out mid-way: the stream is out of step
};

}  // namespace chorus::cluster
