#include "chorus/models/state_bytes.h"

#include <algorithm>
#include <set>

#include "chorus/core/env.h"
#include "chorus/core/sharding.h"
#include "chorus/distribution/model_parallel.h"

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

std::optional<DeviceStatePlan> device_state_plan(const Model& model) {
  const std::shared_ptr<distribution::Distribution>& dist = model.distribution();
  if (dist == nullptr || dist->device_mesh().devices().size() < 2) return std::nullopt;
  const std::shared_ptr<const distribution::ModelParallel> mesh = distribution::mesh_form(dist);
  const auto bytes = [](const Variable& v, const Shape& shape) {
    return shape.numel() * static_cast<int64_t>(dtype_size(v.dtype()));
  };
  // The share of a variable's whole one device holds: 1 / the size of the axis it is split over.
  const auto split = [&](const std::optional<int>& axis) {
    return axis ? mesh->device_mesh().shape()[static_cast<size_t>(*axis)] : int64_t{1};
  };
  DeviceStatePlan plan{.devices = static_cast<int>(dist->device_mesh().devices().size())};
  const bool optimizer = model.compiled() && model.optimizer().built();
  std::set<const void*> slots;
  for (const Variable& v : model.weights()) {
    const std::optional<int> axis = mesh != nullptr ? mesh->placement(v).axis : std::nullopt;
    const int64_t whole = bytes(v, v.whole_shape()), held = bytes(v, v.shape()) / split(axis);
    plan.one_device.parameters += whole, plan.largest_device.parameters += held;
    if (!v.trainable()) continue;
    plan.one_device.gradients += whole, plan.largest_device.gradients += held;
    if (!optimizer) continue;
    // A slot follows its variable, or (ZeRO-1 and 2) a replicated variable's rows split over
    // the batch axis; ZeRO-2 keeps only those rows' gradients after the reduction.
    std::optional<int> slot_axis = axis;
    if (!axis && mesh != nullptr && mesh->options().shard != distribution::Shard::kNone && v.shape().rank() > 0 &&
        v.shape()[0] % split(mesh->batch_axis()) == 0 && !model.optimizer().slots_of(v).empty()) {
      slot_axis = mesh->batch_axis();
      if (mesh->options().shard != distribution::Shard::kOptimizerState) {
        plan.largest_device.gradients -= held - held / split(slot_axis);
      }
    }
    for (const Variable& slot : model.optimizer().slots_of(v)) {
      slots.insert(slot.id());
      plan.one_device.optimizer += bytes(slot, slot.whole_shape());
      plan.largest_device.optimizer += bytes(slot, slot.shape()) / split(slot_axis);
    }
  }
  if (optimizer) {
    for (const Variable& v : model.optimizer().variables()) {  // the step count, and any state that is no slot
      if (slots.contains(v.id())) continue;
      plan.one_device.optimizer += bytes(v, v.whole_shape()), plan.largest_device.optimizer += bytes(v, v.shape());
    }
  }
  return plan;
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
