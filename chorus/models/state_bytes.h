// The memory a model's training state takes on each device: weights and optimizer state,
// counted from the tensors themselves (a sharded variable's block on each device of its
// mesh). What the per-device memory limit (CHORUS_DEVICE_MEMORY_LIMIT, Keras's
// LogicalDeviceConfiguration(memory_limit=...)) is checked against. Activations are not
// counted. Read it from the trainer's thread, between steps.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "chorus/models/model.h"

namespace chorus::models {

struct StateBytes {
  // One entry per mesh device; one entry when not placed on a mesh (this worker's bytes,
  // its rows alone of the tables split across workers).
  std::vector<int64_t> per_device;
  int64_t whole = 0;                // the same state held whole on one device
  int64_t largest() const;
};

// The model's weights and, when compiled and built, its optimizer's variables.
StateBytes state_bytes(const Model& model);

// $CHORUS_DEVICE_MEMORY_LIMIT: bytes each device may hold, or nullopt when unset. Throws
// ValueError for anything but a positive integer.
std::optional<int64_t> device_memory_limit();

// Throws ResourceExhaustedError naming the device, the bytes and the limit when the
// model's state on some device exceeds device_memory_limit().
void check_device_memory(const Model& model);

}  // namespace chorus::models
