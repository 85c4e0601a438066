// LaunchOptions: how `chorus launch` starts the workers of a multi-worker job on this host
// (launch()) and how its launchers agree on each attempt's hosts (LaunchRendezvous). A
// plain value.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace chorus::cluster {

struct LaunchOptions {
  int nproc_per_node = 1;  // workers started here
  int nnodes = 1;          // hosts in the job, each running its own launch
  // Elastic jobs (--nnodes MIN:MAX): an attempt may start with as few as this many hosts
  // when the others do not join, e.g. after a host was lost. 0: nnodes, all of them.
  int min_nnodes = 0;
  // This host's index. Node 0 hosts the store and must stay. Its workers take ranks
  // i * nproc_per_node + local rank, where i is its place among the attempt's hosts.
  int node_rank = 0;
  // Node 0's rendezvous address "HOST:PORT". Empty: 127.0.0.1 and a free port, which only
  // a single-host job may use.
  std::string master;
  std::vector<std::string> command;  // the program and its arguments
  // The job id workers pass to the store; empty: derived from the master address.
  std::string job_id;
  // How long stopped workers get between SIGTERM and SIGKILL.
  std::chrono::milliseconds kill_grace = std::chrono::seconds(5);
  // When a worker fails, how long the others get to end on their own before SIGTERM: a
  // collective waiting for the failed rank reaches its deadline and names it. Default:
  // $CHORUS_COLLECTIVE_TIMEOUT (or 300 s) + 1 s.
  std::chrono::milliseconds survivor_wait = default_survivor_wait();
  // Restarts all workers, on every host, up to this many times after a failure:
  // torchrun's --max-restarts. Each attempt is a new rendezvous (CHORUS_RESTART_COUNT
  // tells workers which); the store refuses workers of an earlier one. A job with
  // callbacks::BackupAndRestore resumes from its last backup.
  int max_restarts = 0;
  // How long node 0 waits for the hosts of an attempt (torchrun's join_timeout), and,
  // once min_nnodes have joined, for the rest (last_call_timeout). A host that lost its
  // workers to another host's failure rejoins within about survivor_wait + kill_grace.
  std::chrono::milliseconds join_timeout = std::chrono::seconds(600);
  std::chrono::milliseconds last_call = std::chrono::seconds(30);

  static std::chrono::milliseconds default_survivor_wait();
};

}  // namespace chorus::cluster
