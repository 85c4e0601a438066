#include "chorus/distribute/mirrored_strategy.h"

namespace chorus::distribute {

MirroredStrategy::MirroredStrategy(std::vector<Device> devices)
    : distribution_(std::make_shared<distribution::DataParallel>(std::move(devices))) {}

}  // namespace chorus::distribute
