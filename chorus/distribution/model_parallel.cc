#include "chorus/distribution/model_parallel.h"

#include <algorithm>

#include "chorus/core/closest_names.h"
#include "chorus/core/error.h"

namespace chorus::distribution {
namespace {

std::string layout_string(const TensorLayout& layout) {
  std::string out = "(";
  for (size_t i = 0; i < layout.axes().size(); ++i) {
    const auto& axis = layout.axes()[i];
    out += (i ? ", " : "") + (axis ? "'" + *axis + "'" : std::string("None"));
  }
  return out + (layout.axes().size() == 1 ? ",)" : ")");
}

std::string names_string(const std::vector<std::string>& names) {
  std::string out = "(";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out + ")";
}

}  // namespace

ModelParallel::ModelParallel(LayoutMap layout_map, ModelParallelOptions options)
    : Distribution(layout_map.device_mesh()), layout_map_(std::move(layout_map)), options_(std::move(options)) {
  const auto& names = device_mesh().axis_names();
  if (options_.batch_dim_name.empty()) options_.batch_dim_name = names[0];
  const auto it = std::find(names.begin(), names.end(), options_.batch_dim_name);
  if (it == names.end()) {
    throw_error<ValueError>("ModelParallel: batch_dim_name '{}' is not an axis of the device mesh {}",
                            options_.batch_dim_name, names_string(names));
  }
  batch_axis_ = static_cast<int>(it - names.begin());
}

TensorLayout ModelParallel::get_data_layout(const Shape& data_shape) const {
  std::vector<std::optional<std::string>> axes(static_cast<size_t>(std::max(data_shape.rank(), 1)));
  axes[0] = options_.batch_dim_name;
  return TensorLayout(std::move(axes), device_mesh());
}

TensorLayout ModelParallel::get_variable_layout(const autograd::Variable& variable) const {
  if (std::optional<TensorLayout> layout = layout_map_.get(variable.path())) return *layout;
  std::vector<std::optional<std::string>> axes(static_cast<size_t>(variable.shape().rank()));
  if (options_.shard == Shard::kFull &&
      splits_fully(variable, device_mesh().shape()[static_cast<size_t>(batch_axis_)])) {
    axes[0] = options_.batch_dim_name;
  }
  return TensorLayout(std::move(axes), device_mesh());
}

VariablePlacement ModelParallel::placement(const autograd::Variable& variable) const {
  const VariablePlacement out =
      placement_of(variable.path(), get_variable_layout(variable), variable.shape(), /*output=*/false);
  if (out.axis == batch_axis_ && !variable.trainable()) {
    throw_error<ValueError>("{}: layout {} shards the variable over the batch axis '{}', but only trainable "
                            "variables may be (fully sharded data parallelism gathers them for each step)",
                            variable.path(), layout_string(get_variable_layout(variable)), options_.batch_dim_name);
  }
  return out;
}

std::optional<VariablePlacement> ModelParallel::output_placement(const std::string& layer_path,
                                                                 const Shape& shape) const {
  const std::string path = layer_path + "/output";
  const std::optional<TensorLayout> layout = layout_map_.get(path);
  if (!layout) return std::nullopt;
  return placement_of(path, *layout, shape, /*output=*/true);
}

VariablePlacement ModelParallel::placement_of(const std::string& path, const TensorLayout& layout, const Shape& shape,
                                              bool output) const {
  const auto& names = device_mesh().axis_names();
  const char* what = output ? "output" : "variable";
  if (static_cast<int>(layout.axes().size()) != shape.rank()) {
    throw_error<ValueError>("{}: layout {} has {} entries, but the {} has shape {} of rank {}", path,
                            layout_string(layout), layout.axes().size(), what, shape.to_string(), shape.rank());
  }
  VariablePlacement out;
  for (int dim = 0; dim < shape.rank(); ++dim) {
    const auto& name = layout.axes()[static_cast<size_t>(dim)];
    if (!name) continue;
    const auto it = std::find(names.begin(), names.end(), *name);
    if (it == names.end()) {
      throw_error<ValueError>("{}: layout {} names mesh axis '{}', which is not an axis of the mesh {}", path,
                              layout_string(layout), *name, names_string(names));
    }
    const int axis = static_cast<int>(it - names.begin());
    if (output && axis == batch_axis_ && dim == 0) continue;  // the batch is split along it already
    const int64_t size = device_mesh().shape()[static_cast<size_t>(axis)];
    if (shape[dim] % size != 0) {
      throw_error<ValueError>("{}: dimension {} of shape {} does not divide over mesh axis '{}' of size {}", path,
                              dim, shape.to_string(), *name, size);
    }
    if (axis == batch_axis_ && dim != 0) {
      throw_error<ValueError>("{}: layout {} splits dimension {} over the batch axis '{}'; only the first may be", path,
                              layout_string(layout), dim, *name);
    }
    if (out.axis) {
      throw_error<ValueError>("{}: layout {} shards more than one dimension; chorus shards a {} along one", path,
                              layout_string(layout), what);
    }
    out = VariablePlacement{axis, dim};
  }
  return out;
}

void ModelParallel::check_layout_keys(std::span<const std::string> variable_paths,
                                      std::span<const std::string> output_paths) const {
  if (options_.ignore_unmatched_layout_keys) return;
  std::vector<std::string> paths(variable_paths.begin(), variable_paths.end());
  paths.insert(paths.end(), output_paths.begin(), output_paths.end());
  const std::vector<std::string> unmatched = layout_map_.unmatched_keys(paths);
  if (unmatched.empty()) return;
  std::string nearest;
  for (const std::string& path : closest_names(unmatched[0], variable_paths, 3)) {
    nearest += (nearest.empty() ? "'" : ", '") + path + "'";
  }
  throw_error<ValueError>(
      "LayoutMap: key '{}' matches no variable and no layer output of the model; the nearest variable paths: {} "
      "(ModelParallelOptions::ignore_unmatched_layout_keys ignores such keys, as Keras does)",
      unmatched[0], nearest.empty() ? "none (the model has no variables)" : nearest);
}

std::shared_ptr<const ModelParallel> mesh_form(const std::shared_ptr<const Distribution>& distribution) {
  if (auto model_parallel = std::dynamic_pointer_cast<const ModelParallel>(distribution)) return model_parallel;
  const auto* data_parallel = dynamic_cast<const DataParallel*>(distribution.get());
  if (data_parallel == nullptr || data_parallel->options().shard == Shard::kNone) return nullptr;
  return std::make_shared<ModelParallel>(LayoutMap(data_parallel->device_mesh()),
                                         ModelParallelOptions{.batch_dim_name = data_parallel->batch_dim_name(),
                                                              .shard = data_parallel->options().shard});
}

int ModelParallel::num_replicas() const {
  const auto positions = static_cast<int>(device_mesh().shape()[static_cast<size_t>(batch_axis_)]);
  return mesh_spans_workers() ? positions : positions * num_workers();
}

}  // namespace chorus::distribution
