// ModelParallel: Keras 3's keras.distribution.ModelParallel. Variables are laid out over a
// DeviceMesh by a LayoutMap (sharded where a layout names a mesh axis, replicated
// elsewhere) and each batch is split along the mesh's batch axis: a (2, 4) mesh of
// ("batch", "model") runs two data-parallel replicas of a model split four ways. Steps run
// on one thread per device (distribute/mesh_runner.h); the ops insert the collectives the
// layouts imply (ops/sharded_ops.h). Immutable once built, like every Distribution.
//
//   DeviceMesh mesh({2, 4}, {"batch", "model"}, ch::devices());
//   LayoutMap layout_map(mesh);
//   layout_map["d1/kernel"] = {std::nullopt, "model"};
//   ch::distribution::set_distribution(ModelParallel(layout_map, {.batch_dim_name = "batch"}));
#pragma once

#include <optional>
#include <span>
#include <string>

#include "chorus/distribution/distribution.h"
#include "chorus/distribution/layout_map.h"

namespace chorus::distribution {

// Where one variable lives on the mesh: split along `dim` over mesh axis `axis` (indices
// into the mesh's axes), or replicated when `axis` is nullopt.
struct VariablePlacement {
  std::optional<int> axis;
  int dim = 0;
};

struct ModelParallelOptions {
  // The mesh axis batches are split along; empty: the mesh's first.
  std::string batch_dim_name;
  // Keras's option for multi-worker input, kept for its config.
  bool auto_shard_dataset = true;
  // What the batch axis splits of the variables the LayoutMap leaves replicated over it
  // (Shard's ZeRO stages): kFull lays each out as ("batch", None, ...) where
  // splits_fully(); with kOptimizerState or kGradients, and for the variables kFull leaves
  // whole, their optimizer state is split over it by rows where the first dimension
  // divides. A layout may also name the batch axis for a variable's first dimension itself.
  Shard shard = Shard::kNone;
  // Keras's behaviour: a LayoutMap key that matches no variable and no layer output is
  // ignored. chorus refuses one by default, since a renamed layer would otherwise stay
  // replicated until it runs out of memory.
  bool ignore_unmatched_layout_keys = false;
};

class ModelParallel : public Distribution {
 public:
  // Throws ValueError when `batch_dim_name` is not an axis of the mesh.
  explicit ModelParallel(LayoutMap layout_map, ModelParallelOptions options = {});
  // Keras's ModelParallel(layout_map=..., batch_dim_name=...).
  ModelParallel(LayoutMap layout_map, std::string batch_dim_name)
      : ModelParallel(std::move(layout_map), ModelParallelOptions{.batch_dim_name = std::move(batch_dim_name)}) {}

  const LayoutMap& layout_map() const { return layout_map_; }
  const std::string& batch_dim_name() const { return options_.batch_dim_name; }
  int batch_axis() const { return batch_axis_; }
  const ModelParallelOptions& options() const { return options_; }

  TensorLayout get_data_layout(const Shape& data_shape) const override;
  // The LayoutMap's layout for the variable's path, or a replicated one.
  TensorLayout get_variable_layout(const autograd::Variable& variable) const override;
  // The placement of a variable, checked against its shape and the mesh (DESIGN.md §3:
  // errors come before the first step). Throws ValueError naming the variable for a layout
  // of another rank, an axis the mesh lacks, a dimension that does not divide over its
  // axis ("d1/kernel: dimension 1 of shape (784, 250) does not divide over mesh axis
  // 'model' of size 4"), a batch-axis layout of any dimension but the first or of a
  // variable that is not trainable, and for what chorus does not do yet: a variable
  // sharded along more than one dimension.
  VariablePlacement placement(const autograd::Variable& variable) const;
  // The placement the LayoutMap asks for a layer's output (key "<layer path>/output"), or
  // nullopt for none. The batch axis may name the first dimension (the batch is split along
  // it anyway). Throws ValueError as placement() does.
  std::optional<VariablePlacement> output_placement(const std::string& layer_path, const Shape& shape) const;

  // Throws ValueError for the first LayoutMap key that matches none of `variable_paths` and
  // none of `output_paths` ("<layer path>/output"), naming it and the three variable paths
  // nearest it, unless options().ignore_unmatched_layout_keys.
  void check_layout_keys(std::span<const std::string> variable_paths, std::span<const std::string> output_paths) const;

  // The data-parallel replicas: the batch axis's size (times the workers, unless the mesh
  // spans them).
  int num_replicas() const override;
  std::shared_ptr<Distribution> clone() const override { return std::make_shared<ModelParallel>(*this); }

 private:
  VariablePlacement placement_of(const std::string& path, const TensorLayout& layout, const Shape& shape,
                                 bool output) const;

  LayoutMap layout_map_;
  ModelParallelOptions options_;
  int batch_axis_ = 0;
};

// The ModelParallel a distribution's steps run as: a ModelParallel itself; a DataParallel
// with a Shard as one over its mesh with no layouts and that Shard; nullptr for plain
// data parallelism or none. Each call makes a DataParallel's anew.
std::shared_ptr<const ModelParallel> mesh_form(const std::shared_ptr<const Distribution>& distribution);

}  // namespace chorus::distribution
