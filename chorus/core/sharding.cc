#include "chorus/core/sharding.h"

namespace chorus {
namespace {

// The mesh device a thread runs (set by the model-parallel runner for its step): ops below
// the step interface read it to run their sharded forms.
thread_local MeshContext* t_mesh = nullptr;
thread_local bool t_local_view = false;

}  // namespace

MeshContext* MeshContext::current() { return t_mesh; }

MeshContextScope::MeshContextScope(MeshContext* context) : previous_(t_mesh) { t_mesh = context; }
MeshContextScope::~MeshContextScope() { t_mesh = previous_; }

LocalShardScope::LocalShardScope() : previous_(t_local_view) { t_local_view = true; }
LocalShardScope::~LocalShardScope() { t_local_view = previous_; }

bool sharding_detail::local_view() { return t_local_view; }

const Shape& Tensor::sharded_shape() const { return t_local_view ? impl_->shape : impl_->sharding->global_shape; }

void Tensor::check_block_access() const {
  if (t_local_view) return;
  const Sharding& s = *impl_->sharding;
  const MeshContext* mesh = MeshContext::current();
  throw_error<Error>(
      "Tensor: the data of a tensor of shape {} sharded along dimension {} over mesh axis '{}' was read by code "
      "that has no sharding rule; only its block of shape {} is here (ops::sharded::replicate gathers it)",
      s.global_shape.to_string(), s.dim, mesh != nullptr ? mesh->axis_name(s.axis) : std::to_string(s.axis),
      impl_->shape.to_string());
}

Tensor shard_block(const Tensor& tensor) {
  const TensorImpl& from = *tensor.impl();
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = from.storage;
  impl->offset = from.offset;
  impl->shape = from.shape;
  impl->dtype = from.dtype;
  return Tensor(std::move(impl));
}

Tensor sharded_tensor(const Tensor& block, Sharding sharding) {
  Tensor local = block.impl()->sharding ? shard_block(block) : block;
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = local.impl()->storage;
  impl->offset = local.impl()->offset;
  impl->shape = local.impl()->shape;
  impl->dtype = local.impl()->dtype;
  impl->sharding = std::make_shared<const Sharding>(std::move(sharding));
  return Tensor(std::move(impl));
}

}  // namespace chorus
