// Device: where a tensor's storage lives and where its ops run. A plain value; today
// only CPU, and `Device::cuda(i)` is reserved so user code need not change when GPUs come.
#pragma once

#include <string>

namespace chorus {

enum class DeviceType : uint8_t { kCPU, kCUDA };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;

  static constexpr Device cpu(int index = 0) { return {DeviceType::kCPU, index}; }
  static constexpr Device cuda(int index = 0) { return {DeviceType::kCUDA, index}; }

  bool is_cpu() const { return type == DeviceType::kCPU; }
  // "cpu:0", "cuda:1".
  std::string to_string() const;
  friend bool operator==(const Device&, const Device&) = default;
};

}  // namespace chorus
