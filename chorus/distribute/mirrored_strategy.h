// tf.distribute.MirroredStrategy on chorus's data parallelism: synchronous replicas, one
// per local device, with mirrored variables. A front door over distribution::DataParallel
// for programs written in the tf.distribute style. Copyable; copies share replica threads.
// Like every distribution, one made after distribution::initialize() spans the job's
// workers; multi-worker programs should say so with MultiWorkerMirroredStrategy.
//
//   ch::distribute::MirroredStrategy strategy;
//   fmt::print("Number of devices: {}\n", strategy.num_replicas_in_sync());
//   { auto scope = strategy.scope(); model = get_compiled_model(); }  // compile captures it
#pragma once

#include <memory>
#include <vector>

#include "chorus/distribution/distribution.h"

namespace chorus::distribute {

class MirroredStrategy {
 public:
  // All local devices when `devices` is empty. Throws IndexError for a device that does
  // not exist, ValueError for one listed twice.
  explicit MirroredStrategy(std::vector<Device> devices = {});

  int num_replicas_in_sync() const { return distribution_->num_replicas(); }
  const std::vector<Device>& devices() const { return distribution_->device_mesh().devices(); }

  // Models compiled while the scope lives train with this strategy, wherever fit is
  // called. Variables may be created outside the scope: on a CPU host the mirrors
  // share one buffer, so where a variable was made does not matter.
  distribution::DistributionScope scope() const { return distribution_->scope(); }

  const std::shared_ptr<distribution::DataParallel>& distribution() const { return distribution_; }

 private:
  std::shared_ptr<distribution::DataParallel> distribution_;
};

}  // namespace chorus::distribute
