// The redistributions and generic rules of sharded_ops.h. Blocks are cut and joined by
// the copy kernels directly (no op, nothing recorded), so this unit includes no op.
#include "chorus/ops/sharded_ops.h"

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/copy_kernels.h"

namespace chorus::ops::sharded {
namespace {

void check_float32(const Tensor& t, const char* what) {
  if (t.dtype() != kFloat32) {
    throw_error<DTypeError>("{}: model-parallel collectives move float32 tensors, got {}", what,
                            dtype_name(t.dtype()));
  }
}

// Position `index`'s block of `whole` along `dim`, as a plain tensor (no record); a
// sharded `whole` is gathered first.
Tensor block_of(const Tensor& whole, int axis, int dim) {
  autograd::NoGradGuard no_grad;
  const Tensor x = replicate(whole);
  const int n = mesh().axis_size(axis);
  const int64_t size = x.dim(dim) / n;
  std::vector<int64_t> start(static_cast<size_t>(x.rank()), 0);
  Shape block = x.shape();
  start[static_cast<size_t>(dim)] = size * mesh().axis_index(axis);
  block[dim] = size;
  return backend::cpu::extract_block(x, start, block);
}

// Every position's `block` along `axis`, joined along `dim` (no record).
Tensor gather_blocks(const Tensor& block, int axis, int dim) {
  check_float32(block, "replicate");
  MeshContext& m = mesh();
  const int n = m.axis_size(axis);
  const int64_t count = block.numel();
  Tensor all = Tensor::empty({count * n}, kFloat32);
  m.all_gather(block, all, axis);
  Shape whole = block.shape();
  whole[dim] *= n;
  if (dim == 0) return all.view(whole);
  Tensor out = Tensor::empty(whole, kFloat32);
  std::vector<int64_t> start(static_cast<size_t>(block.rank()), 0);
  for (int p = 0; p < n; ++p) {
    start[static_cast<size_t>(dim)] = p * block.dim(dim);
    backend::cpu::insert_block(out, start, all.first_axis_slice(p * count, (p + 1) * count), block.shape());
  }
  return out;
}

Tensor gather_all(const Tensor& g) { return is_sharded(g) ? replicate(g) : g; }

}  // namespace

MeshContext& mesh() {
  MeshContext* m = MeshContext::current();
  if (m == nullptr) throw Error("sharded op: a sharded tensor was used outside a model-parallel step");
  return *m;
}

Tensor replicate(const Tensor& x) {
  if (!is_sharded(x)) return x;
  const Sharding s = sharding_of(x);
  Tensor out = gather_blocks(shard_block(x), s.axis, s.dim);
  autograd::record("replicate", {x}, {out}, [&] {
    return [s](std::span<const Tensor> g) {
      if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
      return std::vector<Tensor>{sharded_tensor(block_of(gather_all(g[0]), s.axis, s.dim), s)};
    };
  });
  return out;
}

Tensor shard(const Tensor& x, int axis, int dim) {
  MeshContext& m = mesh();
  const int n = m.axis_size(axis);
  if (x.dim(dim) % n != 0) {
    throw_error<ShapeError>("shard: dimension {} of shape {} does not divide over mesh axis '{}' of size {}", dim,
                            x.shape().to_string(), m.axis_name(axis), n);
  }
  const Sharding s{axis, dim, x.shape()};
  Tensor out = sharded_tensor(block_of(x, axis, dim), s);
  autograd::record("shard", {x}, {out}, [&] {
    return [](std::span<const Tensor> g) { return std::vector<Tensor>{g[0].defined() ? gather_all(g[0]) : Tensor()}; };
  });
  return out;
}

Tensor to_local(const Tensor& x) {
  const Sharding s = sharding_of(x);
  Tensor out = shard_block(x);
  autograd::record("to_local", {x}, {out}, [&] {
    return [s](std::span<const Tensor> g) {
      return std::vector<Tensor>{g[0].defined() ? sharded_tensor(g[0], s) : Tensor()};
    };
  });
  return out;
}

Tensor from_local(const Tensor& block, const Sharding& sharding) {
  Tensor out = sharded_tensor(block, sharding);
  autograd::record("from_local", {block}, {out}, [&] {
    return [s = sharding](std::span<const Tensor> g) {
      if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
      return std::vector<Tensor>{is_sharded(g[0]) ? shard_block(g[0]) : block_of(g[0], s.axis, s.dim)};
    };
  });
  return out;
}

Tensor copy_to_axis(const Tensor& x, int axis) {
  Tensor out = x.view(x.shape());
  autograd::record("copy_to_axis", {x}, {out}, [&] {
    return [axis](std::span<const Tensor> g) {
      if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
      Tensor sum = gather_all(g[0]).clone();
      check_float32(sum, "copy_to_axis");
      mesh().all_reduce(sum, axis);
      return std::vector<Tensor>{sum};
    };
  });
  return out;
}

Tensor reduce_from_axis(const Tensor& partial, int axis) {
  check_float32(partial, "reduce_from_axis");
  Tensor out = partial.clone();
  mesh().all_reduce(out, axis);
  autograd::record("reduce_from_axis", {partial}, {out}, [&] {
    return [](std::span<const Tensor> g) { return std::vector<Tensor>{g[0]}; };
  });
  return out;
}

Tensor elementwise(const Unary& op, const Tensor& x) {
  const Sharding& s = sharding_of(x);
  return from_local(op(to_local(x)), s);
}

Tensor elementwise(const Binary& op, const Tensor& a, const Tensor& b) {
  const Shape out_shape = broadcast_shapes(a.shape(), b.shape(), "sharded elementwise op");
  const auto out_dim = [&](const Tensor& t) { return sharding_of(t).dim + out_shape.rank() - t.rank(); };
  const Tensor& lead = is_sharded(a) ? a : b;
  if (is_sharded(a) && is_sharded(b) && (sharding_of(a).axis != sharding_of(b).axis || out_dim(a) != out_dim(b))) {
    return op(replicate(a), replicate(b));
  }
  const Sharding s = result_sharding(sharding_of(lead), out_dim(lead), out_shape);
  const auto block = [&](const Tensor& t) {
    if (is_sharded(t)) return to_local(t);
    const int d = s.dim - (out_shape.rank() - t.rank());
    if (d < 0 || t.dim(d) == 1) return copy_to_axis(t, s.axis);  // used whole by every device
    return to_local(shard(t, s.axis, d));
  };
  return from_local(op(block(a), block(b)), s);
}

Tensor along_axis(const Unary& op, const Tensor& x, int axis) {
  if (x.shape().normalize_axis(axis, "sharded op") == sharding_of(x).dim) return op(replicate(x));
  return elementwise(op, x);
}

}  // namespace chorus::ops::sharded
