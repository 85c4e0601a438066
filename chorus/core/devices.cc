#include "chorus/core/devices.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "chorus/core/env.h"
#include "chorus/core/error.h"

namespace chorus {
namespace {

std::atomic<int> g_cpu_devices{0};  // 0: the default
std::atomic<bool> g_warned{false};

// Distinct (package, core) pairs of the online CPUs in sysfs; hardware_concurrency when
// sysfs is unavailable.
int count_physical_cores() {
  std::set<std::pair<std::string, std::string>> cores;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  for (long cpu = 0; cpu < cpus; ++cpu) {
    const std::string base = fmt::format("/sys/devices/system/cpu/cpu{}/topology/", cpu);
    std::ifstream package(base + "physical_package_id"), core(base + "core_id");
    std::string p, c;
    if (!(package >> p) || !(core >> c)) continue;
    cores.emplace(p, c);
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  return std::max(1u, std::thread::hardware_concurrency());
}

// $name as a count of 1 to 4096, or 0 when it is unset.
int positive_env(const char* name) {
  return static_cast<int>(env_integer(name, "an integer from 1 to 4096", 1, 4096).value_or(0));
}

int cpu_device_count() {
  int n = g_cpu_devices.load();
  if (n == 0) n = positive_env("CHORUS_CPU_DEVICES");
  if (n == 0) n = process_cores();
  if (n > process_cores() && !g_warned.exchange(true)) {
    std::cerr << fmt::format("chorus: warning: {} logical CPU devices on {} cores; replicas share cores\n", n,
                             process_cores());
  }
  return n;
}

}  // namespace

int physical_cores() {
  static const int cores = count_physical_cores();
  return cores;
}

int process_cores() {
  const int share = positive_env("CHORUS_CPU_CORES");
  return share > 0 ? share : physical_cores();
}

void set_cpu_devices(int count) {
  if (count < 0) throw_error<ValueError>("set_cpu_devices: expected count >= 0, got {}", count);
  g_cpu_devices.store(count);
}

std::vector<Device> list_devices(std::string_view device_type) {
  if (!device_type.empty() && device_type != "cpu" && device_type != "CPU") {
    throw_error<ValueError>("list_devices: unknown device type \"{}\"; this build has \"cpu\" devices only",
                            device_type);
  }
  std::vector<Device> devices;
  const int n = cpu_device_count();
  devices.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) devices.push_back(Device::cpu(i));
  return devices;
}

void check_device(const Device& device) {
  const int n = cpu_device_count();
  if (!device.is_cpu() || device.index < 0 || device.index >= n) {
    throw_error<IndexError>("{} does not exist: this host has {} logical CPU devices (cpu:0..cpu:{})",
                            device.to_string(), n, n - 1);
  }
}

int intra_op_threads_of(const Device& device) {
  check_device(device);
  return std::max(1, process_cores() / cpu_device_count());
}

}  // namespace chorus
