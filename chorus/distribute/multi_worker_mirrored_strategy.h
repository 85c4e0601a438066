// tf.distribute.MultiWorkerMirroredStrategy: MirroredStrategy across the workers of a
// multi-worker job (DESIGN.md §3, "Multi-worker"). Making one joins the job that the
// environment describes (TF_CONFIG, torchrun, Open MPI, Slurm; see cluster.h); models
// compiled in its scope then train in lockstep on every worker's local devices. Copyable;
// copies share the job.
//
//   ch::distribute::MultiWorkerMirroredStrategy strategy;   // e.g. under `chorus launch -n 2`
//   { auto scope = strategy.scope(); model = get_compiled_model(); }
#pragma once

#include <memory>
#include <vector>

#include "chorus/cluster/cluster.h"
#include "chorus/distribution/distribution.h"

namespace chorus::distribute {

class MultiWorkerMirroredStrategy {
 public:
  // Joins the job discover_cluster() finds (one worker when no launcher set anything),
  // with every local device. Throws what distribution::initialize() throws.
  MultiWorkerMirroredStrategy();
  // Joins `cluster` with `devices` of this host (all when empty).
  explicit MultiWorkerMirroredStrategy(const cluster::ClusterSpec& cluster, std::vector<Device> devices = {});

  // Replicas over all workers: local devices x workers.
  int num_replicas_in_sync() const { return distribution_->num_replicas(); }
  // This worker and the job (tf's cluster_resolver).
  const cluster::ClusterSpec& cluster_resolver() const { return cluster_; }

  distribution::DistributionScope scope() const { return distribution_->scope(); }
  const std::shared_ptr<distribution::DataParallel>& distribution() const { return distribution_; }

 private:
  cluster::ClusterSpec cluster_;
  std::shared_ptr<distribution::DataParallel> distribution_;
};

}  // namespace chorus::distribute
