// launch(): starts the local workers of a multi-worker job as child processes (what
// `chorus launch -n N -- PROGRAM ARGS...` runs). Each gets the torchrun-style environment
// that discover_cluster() reads, its output is prefixed with its rank, SIGINT/SIGTERM are
// forwarded to all, and when one worker fails the others are stopped (and, with
// max_restarts, all started again). Call from one thread; it installs signal handlers for
// its duration.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace chorus::distribute {

struct LaunchOptions {
  int nproc_per_node = 1;  // workers started here
  int nnodes = 1;          // hosts in the job, each running its own launch
  int node_rank = 0;       // this host's index; its workers are ranks node_rank * nproc_per_node + i
  // Rank 0's rendezvous address "HOST:PORT". Empty: 127.0.0.1 and a free port, which only
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
  // Restarts all local workers (a new rendezvous each time; CHORUS_RESTART_COUNT tells
  // them which) up to this many times after a failure: torchrun's --max-restarts. A job
  // with callbacks::BackupAndRestore resumes from its last backup. Single host only.
  int max_restarts = 0;

  static std::chrono::milliseconds default_survivor_wait();
};

// Runs the workers to the end. Returns 0 when all exit 0 (in some attempt); otherwise the
// exit code of the first worker to fail in the last attempt (128 + N for one killed by
// signal N), after stopping the rest.
// Throws ValueError for bad options (no command, a multi-host job without --master,
// node_rank out of range) and Error if a worker cannot be started.
int launch(const LaunchOptions& options);

// A loopback TCP port nobody listens on now, for a single-host job's rendezvous. Picked
// below the kernel's ephemeral range (ip_local_port_range) where it can be: a port from
// that range may be handed to any socket bound to port 0 or connecting out (Gloo's) before
// rank 0 binds it. Throws Error if no port can be bound at all.
int free_loopback_port();

}  // namespace chorus::distribute
