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
//   ch::distribution::set_distribution(ModelParallel(layout_map, "batch"));
#pragma once

#include <optional>
#include <string>

#include "chorus/distribute/distribution.h"
#include "chorus/distribute/layout_map.h"

namespace chorus::distribution {

// Where one variable lives on the mesh: split along `dim` over mesh axis `axis` (indices
// into the mesh's axes), or replicated when `axis` is nullopt.
struct VariablePlacement {
  std::optional<int> axis;
  int dim = 0;
};

class ModelParallel : public Distribution {
 public:
  // `batch_dim_name`: the mesh axis batches are split along; empty: the mesh's first.
  // `auto_shard_dataset` is Keras's option for multi-worker input, kept for its config.
  // Throws ValueError when `batch_dim_name` is not an axis of the mesh.
  explicit ModelParallel(LayoutMap layout_map, std::string batch_dim_name = "", bool auto_shard_dataset = true);

  const LayoutMap& layout_map() const { return layout_map_; }
  const std::string& batch_dim_name() const { return batch_dim_name_; }
  int batch_axis() const { return batch_axis_; }
  bool auto_shard_dataset() const { return auto_shard_dataset_; }

  TensorLayout get_data_layout(const Shape& data_shape) const override;
  // The LayoutMap's layout for the variable's path, or a replicated one.
  TensorLayout get_variable_layout(const autograd::Variable& variable) const override;
  // The placement of a variable, checked against its shape and the mesh (DESIGN.md §3:
  // errors come before the first step). Throws ValueError naming the variable for a layout
  // of another rank, an axis the mesh lacks, a dimension that does not divide over its
  // axis ("d1/kernel: dimension 1 of shape (784, 250) does not divide over mesh axis
  // 'model' of size 4"), and for what chorus does not do yet: a variable sharded along
  // more than one dimension, or over the batch axis.
  VariablePlacement placement(const autograd::Variable& variable) const;

  // The data-parallel replicas: the batch axis's size (times the workers).
  int num_replicas() const override;
  std::shared_ptr<Distribution> clone() const override { return std::make_shared<ModelParallel>(*this); }

 private:
  LayoutMap layout_map_;
  std::string batch_dim_name_;
  int batch_axis_ = 0;
  bool auto_shard_dataset_ = true;
};

}  // namespace chorus::distribution
