// The devices replicas run on (DESIGN.md §3). On a CPU-only host these are logical CPU
// devices: by default one per physical core, each owning a fixed share of the cores for
// its intra-op threads so replicas never oversubscribe the machine. Thread-safe.
//
//   auto all = chorus::devices();   // {cpu:0, cpu:1} on a 2-core machine
#pragma once

#include <string_view>
#include <vector>

#include "chorus/core/device.h"

namespace chorus {

// The local devices of `device_type` ("cpu", or "" for the default kind), Keras's
// keras.distribution.list_devices. The CPU count comes from, in order: the last
// set_cpu_devices() call, the CHORUS_CPU_DEVICES environment variable, process_cores(). Throws ValueError for an unknown type or a malformed CHORUS_CPU_DEVICES.
std::vector<Device> list_devices(std::string_view device_type = "");

// Sets the number of logical CPU devices (>= 1); 0 restores the default. More devices
// than physical cores is allowed (for testing) and prints a warning once: their threads
// then share cores.
void set_cpu_devices(int count);

// Physical cores of this machine (hyperthread siblings count once).
int physical_cores();

// The cores this process may use: CHORUS_CPU_CORES (which `chorus launch` sets to its
// share when several workers share a host), else physical_cores().
int process_cores();

// The intra-op threads a replica on `device` may use: process_cores() divided evenly among
// the logical CPU devices, at least 1. Throws IndexError naming the device if it does
// not exist ("cpu:7 does not exist: this host has 2 logical CPU devices (cpu:0..cpu:1)").
int intra_op_threads_of(const Device& device);

// Throws IndexError (the message above) unless `device` is one of list_devices().
void check_device(const Device& device);

}  // namespace chorus

namespace chorus {
// ch::devices(): the local devices (DESIGN.md §1).
inline std::vector<Device> devices() { return list_devices(); }
}  // namespace chorus
