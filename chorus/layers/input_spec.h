// InputSpec: what a layer accepts as input — rank, dtype, shape, sizes of given axes —
// declared once (Keras's keras.layers.InputSpec) and checked by Layer::operator() before
// every call, with one message format. A plain value; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "chorus/core/dtype.h"
#include "chorus/core/tree.h"

namespace chorus::layers {

// One input's expectations. Fields left unset accept anything, so a default InputSpec
// checks nothing (Keras's None in a list of specs). Filled with designated
// initializers: `InputSpec{.min_ndim = 2, .axes = {{-1, 784}}}`.
struct InputSpec {
  std::optional<DType> dtype;
  // The full shape, batch axis included; -1 is an axis of any size (Keras's None).
  // Implies ndim = shape->size() when ndim is unset.
  std::optional<std::vector<int64_t>> shape;
  std::optional<int> ndim;
  std::optional<int> max_ndim;
  std::optional<int> min_ndim;
  // Axis -> required size; a negative axis counts from the end ({-1: 784}: the last axis).
  std::map<int, int64_t> axes;
  // Skips the ndim check, and lets `shape` (rank N) accept rank N+1 inputs whose last
  // axis is 1 and rank N-1 inputs when its own last axis is 1.
  bool allow_last_axis_squeeze = false;
};

// Throws ValueError unless `spec` is consistent: an axis beyond ndim (or max_ndim) - 1,
// as Keras's constructor: "Axis 2 is greater than the maximum allowed value: 1".
void validate_input_spec(const InputSpec& spec);

// Checks `inputs` against `specs`, one spec per flattened input (list order; a dict's
// sorted keys); no specs accepts anything. A symbolic input's batch axis (0 rows) is of
// any size. Throws ValueError naming `layer_name` and the input's index, as Keras:
//   Input 0 of layer "dense" is incompatible with the layer: expected min_ndim=2, found
//   ndim=1. Full shape received: (4,)
//   Input 1 of layer "add" is incompatible with the layer: expected axis -1 of input shape
//   to have value 4, but received input with shape (None, 3)
//   Layer "add" expects 2 input(s), but it received 1 input tensors. Inputs received: ...
// Cheap when the inputs pass (integer compares; a single tensor is not flattened).
void assert_input_compatibility(std::span<const InputSpec> specs, const Tree& inputs, std::string_view layer_name);

}  // namespace chorus::layers
