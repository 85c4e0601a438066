// Variable: a named tensor whose value persists across steps (a weight), with a path
// such as "dense_1/kernel". A handle: copies share the value. A trainable variable is
// watched by every GradientTape. Reading from many threads is safe; assign() must not
// run while another thread computes with the value.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "chorus/autograd/autocast_scope.h"
#include "chorus/core/tensor.h"

namespace chorus {
class MeshContext;
}  // namespace chorus

namespace chorus::autograd {

// Which rows of a whole value a worker keeps when a variable is split by rows across the
// workers of a job (DistributedEmbedding's tables and their optimizer slots): rows
// [begin, begin + the variable's own rows) of `whole_shape`, the block past the whole's
// last row (the last worker's padding) zero.
struct RowShard {
  int64_t begin = 0;
  Shape whole_shape;
};

class Variable {
 public:
  Variable() = default;
  // Takes `initial_value` (not copied: the variable owns it from now on).
  Variable(std::string path, Tensor initial_value, bool trainable = true);

  // A variable that is not trainable, of `like`'s shape and stored dtype, every element
  // `value`: split into blocks on the devices as `like` is where `like` is (an optimizer
  // slot following a sharded variable, made without ever holding its whole value), whole
  // elsewhere.
  static Variable filled_like(std::string path, const Variable& like, double value);

  const std::string& path() const { return impl().path; }
  // The last component of the path: "kernel" for "dense_1/kernel".
  std::string name() const;
  bool trainable() const { return impl().trainable; }
  bool defined() const { return impl_ != nullptr; }
  // Whether both handles are the same variable; id() tells variables apart in a set.
  // Neither reads the value (which, distributed, would be gathered).
  bool is(const Variable& other) const { return impl_ == other.impl_; }
  const void* id() const { return impl_.get(); }

  // The value as a tensor; ops on it are recorded when the variable is trainable. On a
  // device thread of a model-parallel step: that device's value (a sharded tensor where
  // the variable is sharded), or, where the mesh gathers the variable on read (fully
  // sharded data parallelism), the whole value the mesh gathered from the devices' blocks
  // for the step; elsewhere the whole value, gathered from the devices.
  // Inside an AutocastScope (a layer's call under a mixed precision policy): that value
  // cast to the scope's dtype.
  const Tensor& value() const {
    const Impl& i = impl();
    const Tensor& stored = i.devices != nullptr ? distributed_value() : i.value;
    if (AutocastScope* scope = AutocastScope::current()) [[unlikely]] return scope->cast(stored);
    return stored;
  }
  operator const Tensor&() const { return value(); }  // NOLINT: use a variable wherever a tensor goes
  // Neither gathers a distributed value.
  const Shape& shape() const {
    const Impl& i = impl();
    if (i.devices != nullptr) [[unlikely]] return distributed_shape();
    return i.value.shape();
  }
  // The dtype value() gives: inside an AutocastScope, a floating variable reads as the
  // scope's dtype (as Keras's variable.dtype does); stored_dtype() is what it holds.
  DType dtype() const {
    const DType stored = stored_dtype();
    const AutocastScope* scope = AutocastScope::current();
    if (scope != nullptr && scope->dtype() && is_floating(stored)) [[unlikely]] return *scope->dtype();
    return stored;
  }
  DType stored_dtype() const {
    const Impl& i = impl();
    if (i.devices != nullptr) [[unlikely]] return distributed_shape_source().dtype();
    return i.value.dtype();
  }

  // Model parallelism: keeps the value as `values[d]` on mesh device d from now on — the
  // whole value where it is replicated, or a sharded tensor (core/sharding.h) holding
  // block `blocks[d]` where it is sharded (`blocks` empty: replicated). The values are the
  // variable's own; the value it had is dropped. Throws ShapeError / DTypeError unless
  // every value has the variable's global shape and dtype.
  void set_device_values(std::vector<Tensor> values, std::vector<int> blocks) const;
  // Whether the value is kept per device, and those values (empty when it is not).
  bool distributed() const { return impl().devices != nullptr; }
  const std::vector<Tensor>& device_values() const;
  // Puts `value` in place of device `device`'s value and returns the value it had (for a
  // while: ZeRO's update of some rows). Not checked; the caller restores it.
  Tensor exchange_device_value(size_t device, Tensor value) const;
  // Back to one whole value: `whole` when given, else the one gathered from the devices.
  void gather_device_values(const Tensor& whole = Tensor()) const;
  // Under a mesh that spans workers, this process's devices hold only some blocks of a
  // sharded variable (value() outside a step then throws ValueError naming it). Per block
  // along the sharded dimension (one where replicated), whether a device here holds it.
  std::vector<bool> held_blocks() const;
  // The whole value with block k copied from this process's devices where take[k] and
  // `fill` elsewhere (models::whole_values adds the workers' parts into the whole).
  // REQUIRES: take[k] only where held_blocks()[k], and take has one entry per block.
  Tensor whole_of_blocks(const std::vector<bool>& take, double fill) const;
  // Forgets the gathered whole value after the devices' values changed (a step ran).
  void device_values_changed() const;

  // Whether the variable is read by row gathers (an Embedding table sets it): its
  // gradient is then mostly the rows a batch read, and data-parallel training exchanges
  // those rows rather than all-reducing the whole table. Shared by every handle.
  bool sparse_gradients() const { return impl().sparse_gradients; }
  void set_sparse_gradients(bool sparse) const { impl_->sparse_gradients = sparse; }

  // Whether data parallelism across workers splits the variable by rows (a
  // DistributedEmbedding table): each worker then keeps one block (keep_rows).
  bool splits_rows_across_workers() const { return impl().split_rows; }
  void set_splits_rows_across_workers(bool split) const { impl_->split_rows = split; }
  // Multi-worker row sharding: keeps rows [begin, begin + rows) of the value from now on
  // (zeros past its end: a table of fewer rows than workers leaves some only padding) and
  // remembers the whole shape. Throws ValueError for a variable of rank 0, begin < 0 or
  // rows < 1.
  void keep_rows(int64_t begin, int64_t rows) const;
  // The shape of the whole value: the variable's own shape unless it is row-sharded.
  const Shape& whole_shape() const {
    const auto& shard = impl().row_shard;
    return shard ? shard->whole_shape : shape();
  }
  // assign() of a whole value (of whole_shape()): only the rows kept where row-sharded.
  void assign_whole(const Tensor& whole) const;
  // assign_whole() from a whole value's row-major bytes (a mapped file): copies only the
  // bytes of the rows or blocks this process keeps, so a device reads just its own part.
  // Throws ShapeError unless `whole` has whole_shape()'s bytes in the stored dtype.
  void assign_whole_bytes(std::span<const std::byte> whole) const;
  // Marks a variable made with a row-sharded variable's shape (its optimizer slot).
  void set_row_shard(const RowShard& shard) const { impl_->row_shard = shard; }
  // Set where the variable holds only some rows of its whole value.
  const std::optional<RowShard>& row_shard() const { return impl().row_shard; }

  // Overwrites the value in place (optimizer updates, loading weights). Throws
  // ShapeError / DTypeError naming the variable if `new_value` does not match.
  void assign(const Tensor& new_value) const;

 private:
  struct DeviceValues;
  struct Impl {
    std::string path;
    Tensor value;  // under model parallelism: the gathered whole value, made when read
    bool sparse_gradients = false;
    bool trainable = false;
    std::shared_ptr<DeviceValues> devices;
    bool split_rows = false;
    std::optional<RowShard> row_shard;
  };
  const Tensor& distributed_value() const;
  const Tensor& device_thread_value(MeshContext& mesh) const;
  const Tensor& distributed_shape_source() const;
  const Shape& distributed_shape() const;
  const Impl& impl() const {
    if (!impl_) throw Error("Variable: use of an undefined variable");
    return *impl_;
  }
  std::shared_ptr<Impl> impl_;
};

}  // namespace chorus::autograd
