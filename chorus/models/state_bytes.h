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

// Training state by kind: the parameters, a gradient per trainable parameter (laid out
// as it is), the optimizer's variables.
struct StateParts {
  int64_t parameters = 0;
  int64_t gradients = 0;
  int64_t optimizer = 0;
};

struct DeviceStatePlan {
  int devices = 1;
  StateParts largest_device;
  StateParts one_device;  // the same state held whole on one device
};

// What each device of the model's distribution holds once the state is placed, from the
// layouts alone, so before the first step too (Model::summary prints it): a variable
// split over a mesh axis of size n holds 1/n on each device, and with
// Shard::kOptimizerState a replicated variable's slots 1/batch-size (kGradients: its reduced
// gradient too; kFull: the variable as well, where it splits). The optimizer's part
// once it is built. nullopt without a distribution of several devices. Throws ValueError
// as ModelParallel::placement does for a layout that cannot apply.
std::optional<DeviceStatePlan> device_state_plan(const Model& model);

// $CHORUS_DEVICE_MEMORY_LIMIT: bytes each device may hold, or nullopt when unset. Throws
// ValueError for anything but a positive integer.
std::optional<int64_t> device_memory_limit();

// Throws ResourceExhaustedError naming the device, the bytes and the limit when the
// model's state on some device exceeds device_memory_limit().
void check_device_memory(const Model& model);

}  // namespace chorus::models
