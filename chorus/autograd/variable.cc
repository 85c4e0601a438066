#include "chorus/autograd/variable.h"

#include <algorithm>
#include <cstring>

#include "chorus/core/creation.h"
#include "chorus/core/sharding.h"

namespace chorus::autograd {

struct Variable::DeviceValues {
  std::vector<Tensor> values;
  std::vector<int> blocks;  // empty: every device holds the whole value
  std::mutex mutex;         // guards the gathered whole value
  bool whole_current = false;
};

namespace {

// How many blocks a value of `devices` is split into along its sharded dimension (1 where
// replicated).
int block_count(const std::vector<Tensor>& values, const std::vector<int>& blocks) {
  if (blocks.empty()) return 1;
  const Sharding& s = *values[0].impl()->sharding;
  LocalShardScope local;
  return static_cast<int>(s.global_shape[s.dim] / values[0].shape()[s.dim]);
}

// The whole tensor from device values: device 0's where replicated, else the blocks in
// order along the sharded dimension. Only the blocks in `take` (all where null) are
// copied, `fill` goes elsewhere; a block to take that no device here holds is an error.
Tensor assemble_whole(const std::string& path, const std::vector<Tensor>& values, const std::vector<int>& blocks,
                      const std::vector<bool>* take = nullptr, double fill = 0) {
  LocalShardScope local;
  const auto taken = [&](int k) { return take == nullptr || (*take)[static_cast<size_t>(k)]; };
  if (blocks.empty()) return taken(0) ? values[0].clone() : full(values[0].shape(), fill, values[0].dtype());
  const Sharding& s = *values[0].impl()->sharding;
  const Shape& global = s.global_shape;
  Tensor whole = take == nullptr ? Tensor::empty(global, values[0].dtype()) : full(global, fill, values[0].dtype());
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(whole.dtype()));
  for (int d = 0; d < s.dim; ++d) outer *= global[d];
  for (int d = s.dim + 1; d < global.rank(); ++d) inner *= global[d];
  const int count = block_count(values, blocks);
  const int64_t block_bytes = global[s.dim] / count * inner;
  for (int k = 0; k < count; ++k) {
    if (!taken(k)) continue;
    const auto holder = std::find(blocks.begin(), blocks.end(), k) - blocks.begin();
    if (holder == static_cast<std::ptrdiff_t>(blocks.size())) {
      throw_error<ValueError>("Variable '{}': block {} of its {} along dimension {} is on another worker's device; "
                              "models::whole_values gathers the whole value over the job (every worker calls it)",
                              path, k, count, s.dim);
    }
    const auto* src = static_cast<const char*>(values[static_cast<size_t>(holder)].raw_data());
    auto* dst = static_cast<char*>(whole.raw_data()) + k * block_bytes;
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(dst + o * block_bytes * count, src + o * block_bytes, static_cast<size_t>(block_bytes));
    }
  }
  return whole;
}

// Copies block `block` of a whole value of `global` shape (row-major bytes at `whole`, of
// `count` blocks along `dim`) into `out`.
void copy_block_bytes(const char* whole, const Shape& global, size_t element_size, int dim, int block, int count,
                      const Tensor& out) {
  int64_t outer = 1, inner = static_cast<int64_t>(element_size);
  for (int d = 0; d < dim; ++d) outer *= global[d];
  for (int d = dim + 1; d < global.rank(); ++d) inner *= global[d];
  const int64_t block_bytes = global[dim] / count * inner;
  const char* src = whole + block * block_bytes;
  LocalShardScope local;
  auto* dst = static_cast<char*>(out.raw_data());
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(dst + o * block_bytes, src + o * block_bytes * count, static_cast<size_t>(block_bytes));
  }
}

void copy_block(const Tensor& whole, int dim, int block, int count, const Tensor& out) {
  copy_block_bytes(static_cast<const char*>(whole.raw_data()), whole.shape(), dtype_size(whole.dtype()), dim, block,
                   count, out);
}

}  // namespace

Variable::Variable(std::string path, Tensor initial_value, bool trainable)
    : impl_(std::make_shared<Impl>(Impl{std::move(path), Tensor(), false, trainable, nullptr})) {
  if (!initial_value.defined()) throw_error<ValueError>("Variable '{}': the initial value is undefined", impl_->path);
  // A handle of its own on the same storage: marking it trainable leaves the caller's
  // tensor (and any tape slot it has) untouched.
  impl_->value = initial_value.view(initial_value.shape());
  if (trainable && !is_floating(impl_->value.dtype())) {
    throw_error<DTypeError>("Variable '{}': a trainable variable must be floating, got dtype {}", impl_->path,
                            dtype_name(impl_->value.dtype()));
  }
  impl_->value.impl()->autograd.trainable = trainable;
}

Variable Variable::filled_like(std::string path, const Variable& like, double value) {
  const DeviceValues* blocks = like.impl().devices.get();
  if (blocks == nullptr || blocks->blocks.empty()) {
    return Variable(std::move(path), full(like.shape(), value, like.stored_dtype()), /*trainable=*/false);
  }
  Variable out;
  out.impl_ = std::make_shared<Impl>(Impl{std::move(path), Tensor(), false, false, nullptr});
  auto devices = std::make_shared<DeviceValues>();
  LocalShardScope local;
  for (const Tensor& block : blocks->values) {
    devices->values.push_back(sharded_tensor(full(block.shape(), value, block.dtype()), *block.impl()->sharding));
  }
  devices->blocks = blocks->blocks;
  out.impl_->devices = std::move(devices);
  return out;
}

std::string Variable::name() const {
  const std::string& p = path();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

namespace {

// Rows [begin, begin + rows) of `whole`, zeros past its end.
Tensor rows_of(const Tensor& whole, int64_t begin, int64_t rows) {
  Shape block_shape = whole.shape();
  block_shape[0] = rows;
  Tensor block = zeros(block_shape, whole.dtype());
  const int64_t kept = std::clamp<int64_t>(whole.dim(0) - begin, 0, rows);  // none for a block all padding
  if (kept > 0) block.first_axis_slice(0, kept).copy_from(whole.first_axis_slice(begin, begin + kept));
  return block;
}

}  // namespace

void Variable::keep_rows(int64_t begin, int64_t rows) const {
  const Tensor whole = value();
  if (whole.rank() == 0 || begin < 0 || rows <= 0) {
    throw_error<ValueError>("Variable '{}': cannot keep rows [{}, {}) of a value of shape {}", path(), begin,
                            begin + rows, whole.shape().to_string());
  }
  Tensor block = rows_of(whole, begin, rows);
  block.impl()->autograd.trainable = whole.impl()->autograd.trainable;
  impl_->row_shard = RowShard{begin, whole.shape()};
  impl_->value = std::move(block);
}

void Variable::assign_whole(const Tensor& whole) const {
  const auto& shard = impl().row_shard;
  if (!shard) {
    assign(whole);
    return;
  }
  if (whole.shape() != shard->whole_shape) {
    throw_error<ShapeError>("Variable '{}': cannot assign a value of shape {} to a variable of shape {}", path(),
                            whole.shape().to_string(), shard->whole_shape.to_string());
  }
  assign(rows_of(whole, shard->begin, shape()[0]));
}

void Variable::assign_whole_bytes(std::span<const std::byte> whole) const {
  const Shape& global = whole_shape();
  const size_t element_size = dtype_size(stored_dtype());
  if (whole.size() != static_cast<size_t>(global.numel()) * element_size) {
    throw_error<ShapeError>("Variable '{}': {} bytes cannot be a value of shape {} and dtype {}", path(), whole.size(),
                            global.to_string(), dtype_name(stored_dtype()));
  }
  const auto* bytes = reinterpret_cast<const char*>(whole.data());
  if (const auto& shard = impl().row_shard) {
    const Tensor& mine = impl_->value;
    const size_t row_bytes = global[0] == 0 ? 0 : whole.size() / static_cast<size_t>(global[0]);
    const int64_t kept = std::clamp<int64_t>(global[0] - shard->begin, 0, mine.dim(0));  // the rest is padding
    std::memset(mine.raw_data(), 0, mine.nbytes());
    if (kept > 0) std::memcpy(mine.raw_data(), bytes + shard->begin * row_bytes, static_cast<size_t>(kept) * row_bytes);
    return;
  }
  if (impl_->devices == nullptr) {
    if (!whole.empty()) std::memcpy(impl_->value.raw_data(), bytes, whole.size());
    return;
  }
  DeviceValues& devices = *impl_->devices;
  const int count = block_count(devices.values, devices.blocks);
  for (size_t d = 0; d < devices.values.size(); ++d) {
    const Tensor& mine = devices.values[d];
    if (devices.blocks.empty()) {
      if (!whole.empty()) std::memcpy(mine.raw_data(), bytes, whole.size());
    } else {
      copy_block_bytes(bytes, global, element_size, mine.impl()->sharding->dim, devices.blocks[d], count, mine);
    }
  }
  device_values_changed();
}

void Variable::assign(const Tensor& new_value) const {
  if (new_value.dtype() != stored_dtype()) {
    throw_error<DTypeError>("Variable '{}': cannot assign a value of dtype {} to a variable of dtype {}", path(),
                            dtype_name(new_value.dtype()), dtype_name(stored_dtype()));
  }
  if (new_value.shape() != shape()) {
    throw_error<ShapeError>("Variable '{}': cannot assign a value of shape {} to a variable of shape {}", path(),
                            new_value.shape().to_string(), shape().to_string());
  }
  // A compiled step would not replay a host copy: a trace that assigns a traced value
  // runs eagerly (BatchNormalization's moving statistics, for now).
  note_host_read(new_value, "Variable::assign");
  if (impl_->devices == nullptr) {
    impl_->value.copy_from(new_value);
    return;
  }
  DeviceValues& devices = *impl_->devices;
  const int count = block_count(devices.values, devices.blocks);
  // Device d's value from the new one: the same block of a sharded value, its own block of
  // a whole one.
  const auto store = [&](size_t d) {
    const Tensor& mine = devices.values[d];
    if (devices.blocks.empty()) {
      mine.copy_from(new_value);
    } else if (new_value.impl()->sharding != nullptr) {
      LocalShardScope local;
      mine.copy_from(shard_block(new_value));
    } else {
      copy_block(new_value, mine.impl()->sharding->dim, devices.blocks[d], count, mine);
    }
  };
  if (MeshContext* mesh = MeshContext::current()) {
    store(static_cast<size_t>(mesh->device()));  // a device thread assigns its own value
  } else {
    for (size_t d = 0; d < devices.values.size(); ++d) store(d);
  }
  std::lock_guard lock(devices.mutex);
  devices.whole_current = false;
}

void Variable::set_device_values(std::vector<Tensor> values, std::vector<int> blocks) const {
  const Shape shape = this->shape();
  const DType dtype = this->stored_dtype();
  for (Tensor& v : values) {
    if (v.shape() != shape || v.dtype() != dtype) {
      throw_error<ShapeError>("Variable '{}': a device value of shape {} and dtype {} does not match {} {}", path(),
                              v.shape().to_string(), dtype_name(v.dtype()), shape.to_string(), dtype_name(dtype));
    }
    v.impl()->autograd.trainable = trainable();
  }
  auto devices = std::make_shared<DeviceValues>();
  devices->values = std::move(values);
  devices->blocks = std::move(blocks);
  impl_->devices = std::move(devices);
  impl_->value = Tensor();
}

const std::vector<Tensor>& Variable::device_values() const {
  static const std::vector<Tensor> kNone;
  return impl().devices ? impl_->devices->values : kNone;
}

Tensor Variable::exchange_device_value(size_t device, Tensor value) const {
  std::swap(impl().devices->values.at(device), value);
  return value;
}

void Variable::gather_device_values(const Tensor& whole) const {
  if (impl().devices == nullptr) return;
  if (whole.defined() && (whole.shape() != shape() || whole.dtype() != stored_dtype())) {
    throw_error<ShapeError>("Variable '{}': a whole value of shape {} and dtype {} does not match {} {}", path(),
                            whole.shape().to_string(), dtype_name(whole.dtype()), shape().to_string(),
                            dtype_name(stored_dtype()));
  }
  Tensor value = whole.defined() ? whole : assemble_whole(path(), impl_->devices->values, impl_->devices->blocks);
  value.impl()->autograd.trainable = impl_->trainable;
  impl_->devices = nullptr;
  impl_->value = std::move(value);
}

std::vector<bool> Variable::held_blocks() const {
  if (impl().devices == nullptr) return {true};
  const DeviceValues& devices = *impl_->devices;
  std::vector<bool> held(static_cast<size_t>(block_count(devices.values, devices.blocks)), devices.blocks.empty());
  for (int k : devices.blocks) held[static_cast<size_t>(k)] = true;
  return held;
}

Tensor Variable::whole_of_blocks(const std::vector<bool>& take, double fill) const {
  if (impl().devices == nullptr) return take.at(0) ? impl_->value.clone() : full(shape(), fill, stored_dtype());
  return assemble_whole(path(), impl_->devices->values, impl_->devices->blocks, &take, fill);
}

void Variable::device_values_changed() const {
  if (impl().devices == nullptr) return;
  std::lock_guard lock(impl_->devices->mutex);
  impl_->devices->whole_current = false;
  impl_->value = Tensor();
}

// A device thread reads its own value, or the whole value its mesh gathered from every
// device's block where it gathers the variable on read; the sharded view stays in a
// LocalShardScope (the update of the device's own block).
const Tensor& Variable::device_thread_value(MeshContext& mesh) const {
  const Tensor& mine = impl_->devices->values[static_cast<size_t>(mesh.device())];
  const Sharding* sharding = mine.impl()->sharding.get();
  if (sharding == nullptr || sharding_detail::local_view() || !mesh.gathers_on_read(*sharding)) return mine;
  return mesh.gathered_value(id());
}

const Tensor& Variable::distributed_value() const {
  DeviceValues& devices = *impl_->devices;
  if (MeshContext* mesh = MeshContext::current()) return device_thread_value(*mesh);
  std::lock_guard lock(devices.mutex);
  if (!devices.whole_current) {
    impl_->value = assemble_whole(path(), devices.values, devices.blocks);
    impl_->value.impl()->autograd.trainable = impl_->trainable;
    devices.whole_current = true;
  }
  return impl_->value;
}

// A device thread's own value (ZeRO's update swaps in a block of rows for a while); the
// first device's elsewhere, seen whole.
const Tensor& Variable::distributed_shape_source() const {
  const DeviceValues& devices = *impl_->devices;
  if (MeshContext* mesh = MeshContext::current()) return devices.values[static_cast<size_t>(mesh->device())];
  return devices.values.front();
}

const Shape& Variable::distributed_shape() const {
  const Tensor& value = distributed_shape_source();
  if (MeshContext::current() == nullptr && value.impl()->sharding != nullptr) return value.impl()->sharding->global_shape;
  return value.shape();
}

}  // namespace chorus::autograd
