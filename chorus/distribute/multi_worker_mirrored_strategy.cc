#include "chorus/distribute/multi_worker_mirrored_strategy.h"

#include "chorus/cluster/worker_group.h"
#include "chorus/distribution/initialize.h"

namespace chorus::distribute {

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy() : MultiWorkerMirroredStrategy(cluster::discover_cluster()) {}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(const cluster::ClusterSpec& cluster,
                                                         std::vector<Device> devices)
    : cluster_(cluster) {
  distribution::initialize(cluster_);
  distribution_ = std::make_shared<distribution::DataParallel>(std::move(devices));
}

}  // namespace chorus::distribute
