// Model parallelism's view of tensors (DESIGN.md §3): a Sharding says that a tensor's
// storage holds one block of a larger (global) tensor split along one dimension over one
// mesh axis; MeshContext is the calling device thread's place in the mesh and the
// collectives along its axes. Core only carries both: ops/sharded_ops.h runs ops on sharded
// tensors, distribute/mesh_runner.cc installs the context. Thread-local, like the tape.
#pragma once

#include <string>

#include "chorus/core/shape.h"
#include "chorus/core/tensor.h"

namespace chorus {
// A block of a global tensor: the global tensor split into equal blocks along `dim`, one
// per position along mesh axis `axis`; this one is the block of the holder's position.
// The block's own shape is TensorImpl::shape, the whole tensor's `global_shape`.
struct Sharding {
  int axis = 0;
  int dim = 0;
  Shape global_shape;
};

// The calling thread's device in a model-parallel mesh, for the length of a step.
class MeshContext {
 public:
  virtual ~MeshContext() = default;

  // The calling thread's context, or nullptr outside a model-parallel step.
  static MeshContext* current();

  // This device among the process's devices of the mesh (the index of its Variable
  // device values); its place in the mesh is axis_index().
  virtual int device() const = 0;
  virtual int axis_size(int axis) const = 0;
  // This device's position along `axis`.
  virtual int axis_index(int axis) const = 0;
  virtual const std::string& axis_name(int axis) const = 0;
  // Collectives among the devices that differ from this one only along `axis` (contiguous
  // float32 tensors, sums in position order so every participant gets the same bits).
  virtual void all_reduce(const Tensor& tensor, int axis) = 0;
  // `output` holds axis_size(axis) blocks of input.numel(): position p's input at block p.
  virtual void all_gather(const Tensor& input, const Tensor& output, int axis) = 0;
  // `input` holds axis_size(axis) blocks of output.numel(); `output` becomes block
  // axis_index(axis) of the sum of every participant's input.
  virtual void reduce_scatter(const Tensor& input, const Tensor& output, int axis) = 0;
  // Whether a variable's block laid out by `sharding` is gathered whole whenever a step
  // reads it (fully sharded data parallelism: blocks over the batch axis, along which the
  // devices compute on different rows, so no op rule can use the blocks as they are).
  virtual bool gathers_on_read(const Sharding& sharding) const = 0;
  // The whole value for this step of such a variable (of Variable::id() `variable`),
  // gathered from the devices' blocks.
  virtual const Tensor& gathered_value(const void* variable) = 0;
  // A layer's output laid out as the distribution asks for "<layer path>/output" (Keras's
  // output layouts): `output` itself where nothing is asked.
  virtual Tensor lay_out_output(const std::string& layer_path, const Tensor& output) = 0;
};

// Installs `context` as the calling thread's for its lifetime.
class MeshContextScope {
 public:
  explicit MeshContextScope(MeshContext* context);
  ~MeshContextScope();
  MeshContextScope(const MeshContextScope&) = delete;
  MeshContextScope& operator=(const MeshContextScope&) = delete;

 private:
  MeshContext* previous_;
};

// While alive, the calling thread sees sharded tensors as their blocks: shape() is the
// block's and data() may be read. The optimizer's per-device update and the sharded ops'
// kernels run in one; everything else sees global shapes and may not touch the data.
class LocalShardScope {
 public:
  LocalShardScope();
  ~LocalShardScope();
  LocalShardScope(const LocalShardScope&) = delete;
  LocalShardScope& operator=(const LocalShardScope&) = delete;

 private:
  bool previous_;
};

namespace sharding_detail {
bool local_view();
}

// Whether `tensor` is a block of a larger tensor as the calling thread sees it.
inline bool is_sharded(const Tensor& tensor) {
  return tensor.defined() && tensor.impl()->sharding != nullptr && !sharding_detail::local_view();
}

// The block itself: a tensor on the same storage with the block's shape and no sharding
// (and no autograd link: ops::sharded::to_local is the recorded form).
Tensor shard_block(const Tensor& tensor);

// A tensor on `block`'s storage that is that block of a tensor laid out by `sharding`.
Tensor sharded_tensor(const Tensor& block, Sharding sharding);

}  // namespace chorus
