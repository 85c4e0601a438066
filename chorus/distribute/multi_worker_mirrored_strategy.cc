#include "chorus/distribute/multi_worker_mirrored_strategy.h"

#include "chorus/distribute/worker_group.h"

namespace chorus::distribute {

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy() : MultiWorkerMirroredStrategy(discover_cluster()) {}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(const ClusterSpec& cluster, std::vector<Device> devices)
    : cluster_(cluster) {
  distribution::initialize(cluster_);
  distribution_ = std::make_shared<distribution::DataParallel>(std::move(devices));
}

}  // namespace chorus::distribute
