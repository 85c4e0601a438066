#include "chorus/distribution/initialize.h"

#include <mutex>

#include "chorus/core/error.h"

namespace chorus::distribution {
namespace {
std::mutex g_group_mutex;
std::shared_ptr<cluster::WorkerGroup> g_group;
}  // namespace

void initialize() { initialize(cluster::discover_cluster()); }

void initialize(const cluster::ClusterSpec& cluster) {
  std::lock_guard lock(g_group_mutex);
  if (g_group) {
    const cluster::ClusterSpec& joined = g_group->cluster();
    if (joined.rank != cluster.rank || joined.world_size != cluster.world_size ||
        joined.master_addr != cluster.master_addr || joined.master_port != cluster.master_port) {
      throw_error<ValueError>("distribution.initialize: this process already joined {}; cannot join {}",
                              joined.to_string(), cluster.to_string());
    }
    return;
  }
  if (!cluster.multi_worker()) return;
  g_group = std::make_shared<cluster::WorkerGroup>(cluster);
}

std::shared_ptr<cluster::WorkerGroup> worker_group() {
  std::lock_guard lock(g_group_mutex);
  return g_group;
}

bool is_chief() {
  const std::shared_ptr<cluster::WorkerGroup> group = worker_group();
  return group == nullptr || group->rank() == 0;
}

}  // namespace chorus::distribution
