#include "chorus/models/state_bytes.h"

#include <algorithm>

#include "chorus/core/env.h"
#include "chorus/core/sharding.h"

namespace chorus::models {
namespace {

std::vector<Variable> state_variables(const Model& model) {
  std::vector<Variable> out = model.weights();
  if (model.compiled()) {
    for (const Variable& v : model.optimizer().variables()) out.push_back(v);
  }
  return out;
}

}  // namespace

int64_t StateBytes::largest() const { return *std::max_element(per_device.begin(), per_device.end()); }

StateBytes state_bytes(const Model& model) {
  StateBytes out;
  const std::vector<Variable> variables = state_variables(model);
  size_t devices = 1;
  for (const Variable& v : variables) devices = std::max(devices, v.device_values().size());
  out.per_device.assign(devices, 0);
  LocalShardScope blocks;  // a sharded value's nbytes() is its block's
  for (const Variable& v : variables) {
    const auto element = static_cast<int64_t>(dtype_size(v.dtype()));
    const int64_t whole = v.whole_shape().numel() * element;
    const int64_t held = v.shape().numel() * element;  // the worker's rows of a table split across workers
    out.whole += whole;
    for (size_t d = 0; d < devices; ++d) {
      out.per_device[d] += v.distributed() ? static_cast<int64_t>(v.device_values()[d].nbytes()) : held;
    }
  }
  return out;
}

std::optional<int64_t> device_memory_limit() {
  return env_integer("CHORUS_DEVICE_MEMORY_LIMIT", "a positive number of bytes", 1);
}

void check_device_memory(const Model& model) {
  const std::optional<int64_t> limit = device_memory_limit();
  if (!limit) return;
  const StateBytes bytes = state_bytes(model);
  for (size_t d = 0; d < bytes.per_device.size(); ++d) {
    if (bytes.per_device[d] <= *limit) continue;
    throw_error<ResourceExhaustedError>(
        "{}: the weights and optimizer state need {} bytes on device {} of {}, over its memory limit of {} bytes "
        "(CHORUS_DEVICE_MEMORY_LIMIT); shard the largest variables with ModelParallel",
        model.name(), bytes.per_device[d], d, bytes.per_device.size(), *limit);
  }
}

}  // namespace chorus::models
