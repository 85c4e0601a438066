#include "chorus/layers/input_spec.h"

#include <algorithm>
#include <string>

#include "chorus/core/error.h"
#include "chorus/layers/node.h"

namespace chorus::layers {
namespace {

// "(None, 4)": -1 (or a symbolic input's batch axis) printed as Keras's None.
std::string spec_dims_string(std::span<const int64_t> dims, bool unknown_batch) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ", ";
    out += dims[i] < 0 || (i == 0 && unknown_batch) ? std::string("None") : std::to_string(dims[i]);
  }
  return out + (dims.size() == 1 ? ",)" : ")");
}

std::string input_shape_string(const Tensor& x) { return spec_dims_string(x.shape().dims(), is_symbolic(x)); }

// Whether axis `i` of `x` has size `want`; a symbolic input's batch axis has any size.
bool spec_dim_matches(const Tensor& x, int i, int64_t want) {
  return want < 0 || x.shape()[i] == want || (i == 0 && is_symbolic(x));
}

[[noreturn]] void throw_incompatible(size_t index, std::string_view layer_name, const std::string& what) {
  throw_error<ValueError>("Input {} of layer \"{}\" is incompatible with the layer: {}", index, layer_name, what);
}

// `spec.shape` against `x`, after allow_last_axis_squeeze drops a last axis of 1 from
// either; only the leading axes common to both are compared (as Keras's zip).
void check_spec_shape(const InputSpec& spec, const Tensor& x, size_t index, std::string_view layer_name) {
  const std::vector<int64_t>& want = *spec.shape;
  const int rank = x.rank();
  int spec_rank = static_cast<int>(want.size());
  int input_rank = rank;
  if (spec.allow_last_axis_squeeze) {
    if (rank == spec_rank + 1 && x.shape()[rank - 1] == 1) {
      input_rank = spec_rank;
    } else if (spec_rank == rank + 1 && want.back() == 1) {
      spec_rank = rank;
    }
  }
  const int common = std::min(spec_rank, input_rank);
  for (int i = 0; i < common; ++i) {
    if (!spec_dim_matches(x, i, want[static_cast<size_t>(i)])) {
      const std::span<const int64_t> found = x.shape().dims().first(static_cast<size_t>(input_rank));
      throw_incompatible(index, layer_name,
                         fmt::format("expected shape={}, found shape={}", spec_dims_string(want, false),
                                     spec_dims_string(found, is_symbolic(x))));
    }
  }
}

void check_input_spec(const InputSpec& spec, const Tensor& x, size_t index, std::string_view layer_name) {
  const int ndim = x.rank();
  const std::optional<int> want_ndim =
      spec.ndim ? spec.ndim : spec.shape ? std::optional<int>(static_cast<int>(spec.shape->size())) : std::nullopt;
  if (want_ndim && !spec.allow_last_axis_squeeze && ndim != *want_ndim) [[unlikely]] {
    throw_incompatible(index, layer_name,
                       fmt::format("expected ndim={}, found ndim={}. Full shape received: {}", *want_ndim, ndim,
                                   input_shape_string(x)));
  }
  if (spec.max_ndim && ndim > *spec.max_ndim) [[unlikely]] {
    throw_incompatible(index, layer_name, fmt::format("expected max_ndim={}, found ndim={}", *spec.max_ndim, ndim));
  }
  if (spec.min_ndim && ndim < *spec.min_ndim) [[unlikely]] {
    throw_incompatible(index, layer_name,
                       fmt::format("expected min_ndim={}, found ndim={}. Full shape received: {}", *spec.min_ndim,
                                   ndim, input_shape_string(x)));
  }
  if (spec.dtype && x.dtype() != *spec.dtype) [[unlikely]] {
    throw_incompatible(index, layer_name,
                       fmt::format("expected dtype={}, found dtype={}", dtype_name(*spec.dtype),
                                   dtype_name(x.dtype())));
  }
  for (const auto& [axis, value] : spec.axes) {
    if (axis < -ndim || axis >= ndim) [[unlikely]] {
      throw_incompatible(index, layer_name,
                         fmt::format("axis {} is out of bounds for an input with ndim={}. Full shape received: {}",
                                     axis, ndim, input_shape_string(x)));
    }
    if (!spec_dim_matches(x, axis < 0 ? axis + ndim : axis, value)) [[unlikely]] {
      throw_incompatible(index, layer_name,
                         fmt::format("expected axis {} of input shape to have value {}, but received input with "
                                     "shape {}",
                                     axis, value, input_shape_string(x)));
    }
  }
  if (spec.shape) check_spec_shape(spec, x, index, layer_name);
}

}  // namespace

void validate_input_spec(const InputSpec& spec) {
  if (spec.axes.empty()) return;
  const std::optional<int> ndim =
      spec.ndim ? spec.ndim : spec.shape ? std::optional<int>(static_cast<int>(spec.shape->size())) : std::nullopt;
  const std::optional<int> bound = ndim ? ndim : spec.max_ndim;
  if (!bound) return;
  const int max_axis = spec.axes.rbegin()->first;
  if (max_axis > *bound - 1) {
    throw_error<ValueError>("Axis {} is greater than the maximum allowed value: {}", max_axis, *bound - 1);
  }
}

void assert_input_compatibility(std::span<const InputSpec> specs, const Tree& inputs, std::string_view layer_name) {
  if (specs.empty()) return;
  if (specs.size() == 1 && inputs.is_tensor()) {  // most calls: no flatten on the way
    check_input_spec(specs[0], inputs.tensor(), 0, layer_name);
    return;
  }
  const std::vector<Tensor> leaves = inputs.flatten();
  if (leaves.size() != specs.size()) {
    throw_error<ValueError>("Layer \"{}\" expects {} input(s), but it received {} input tensors. Inputs received: {}",
                            layer_name, specs.size(), leaves.size(), inputs.to_string());
  }
  for (size_t i = 0; i < leaves.size(); ++i) check_input_spec(specs[i], leaves[i], i, layer_name);
}

}  // namespace chorus::layers
