// TcpStoreServer: the server side of the rendezvous store (TcpStore is its client), a
// thread answering requests on one port. Rank 0 hosts it for a job started by anything
// else; `chorus launch` hosts it on node 0 for its whole run, across restarts. Owns its
// thread and sockets; start_attempt() may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "chorus/core/error.h"

namespace chorus::cluster {

// A store request that failed: the server is unreachable, belongs to another job, or a
// deadline passed. The message names the store's address and the keys.
class StoreError : public Error {
  using Error::Error;
};

class TcpStoreServer {
 public:
  // Listens on host:port (throws StoreError naming them if it cannot, e.g. the port is
  // taken) for clients of `job_id`. A client may also say "<job_id>/attempt-N": the
  // workers of restart N. Each job id sees its own keys, so one attempt never reads
  // another's addresses.
  TcpStoreServer(const std::string& host, int port, std::string job_id);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  // From now on only attempt N's workers are served: a client of another attempt is
  // refused with a message saying so, those still connected are cut off (a request they
  // wait on fails), and the keys of earlier attempts are dropped. Before the first call
  // attempt 0 is served.
  void start_attempt(int attempt);

 private:
  class Loop;
  std::unique_ptr<Loop> loop_;
};

}  // namespace chorus::cluster
