// launch(): starts the local workers of a multi-worker job as child processes (what
// `chorus launch -n N -- PROGRAM ARGS...` runs). Each gets the torchrun-style environment
// that discover_cluster() reads, its output is prefixed with its rank, SIGINT/SIGTERM are
// forwarded to all, and when one worker fails the others are stopped (and, with
// max_restarts, all started again — on every host, and with fewer hosts if min_nnodes
// allows). Node 0's launcher hosts the job's rendezvous store. Call from one thread; it
// installs signal handlers for its duration.
#pragma once

#include "chorus/cluster/launch_options.h"

namespace chorus::cluster {

// Runs the workers to the end. Returns 0 when all exit 0 (in some attempt); otherwise the
// exit code of the first worker to fail in the last attempt (128 + N for one killed by
// signal N), after stopping the rest.
// Throws ValueError for bad options (no command, a multi-host job without --master,
// node_rank out of range, min_nnodes above nnodes), StoreError if node 0's store cannot be
// served or reached, and Error if a worker cannot be started or too few hosts join an
// attempt.
int launch(const LaunchOptions& options);

// A loopback TCP port nobody listens on now, for a single-host job's rendezvous. Picked
// below the kernel's ephemeral range (ip_local_port_range) where it can be: a port from
// that range may be handed to any socket bound to port 0 or connecting out (Gloo's) before
// rank 0 binds it. The port is also claimed (claim_loopback_port) for this process's life,
// so that no other chorus process on this host picks it between the check and rank 0's
// bind. Throws Error if no port can be bound at all.
int free_loopback_port();

// Claims `port` among this host's chorus processes until this process exits: true if the
// claim is now this process's, false if any process (this one included) already holds it.
// The claim is an abstract Unix socket named for the port, which the kernel drops at exit.
bool claim_loopback_port(int port);

}  // namespace chorus::cluster
