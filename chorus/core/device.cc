#include "chorus/core/device.h"

#include <fmt/format.h>

namespace chorus {

std::string Device::to_string() const {
  return fmt::format("{}:{}", type == DeviceType::kCPU ? "cpu" : "cuda", index);
}

}  // namespace chorus
