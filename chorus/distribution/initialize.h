// keras.distribution.initialize: joins this process to the multi-worker job the
// environment describes; the process-wide WorkerGroup it makes is shared by every
// distribution made afterwards. Thread-safe.
#pragma once

#include <memory>

#include "chorus/cluster/cluster.h"
#include "chorus/cluster/worker_group.h"

namespace chorus::distribution {

// keras.distribution.initialize: joins the multi-worker job described by the
// environment (discover_cluster) or by `cluster`. Distributions made afterwards span
// every worker: DataParallel() then has local devices x workers replicas. A single-worker
// cluster is a no-op. Throws ValueError when called twice with different clusters.
void initialize();
void initialize(const cluster::ClusterSpec& cluster);

// The process's worker group, or nullptr before initialize() (or for one worker).
std::shared_ptr<cluster::WorkerGroup> worker_group();

// Whether this process is the job's chief (rank 0), or works alone: the one that writes
// what only one worker should (TensorBoard's files, a profile).
bool is_chief();

}  // namespace chorus::distribution
