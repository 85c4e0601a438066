#include "chorus/ops/sharded_ops.h"

#include "chorus/autograd/tape.h"
#include "chorus/core/creation.h"
#include "chorus/ops/elementwise.h"
#include "chorus/ops/reduction.h"
#include "chorus/ops/shape_ops.h"

namespace chorus::ops::sharded {
namespace {

MeshContext& mesh() {
  MeshContext* m = MeshContext::current();
  if (m == nullptr) throw Error("sharded op: a sharded tensor was used outside a model-parallel step");
  return *m;
}

const Sharding& sharding_of(const Tensor& x) { return *x.impl()->sharding; }

void check_float32(const Tensor& t, const char* what) {
  if (t.dtype() != kFloat32) {
    throw_error<DTypeError>("{}: model-parallel collectives move float32 tensors, got {}", what,
                            dtype_name(t.dtype()));
  }
}

// Position `index`'s block of `whole` along `dim`, as a plain tensor (no record).
Tensor block_of(const Tensor& whole, int axis, int dim) {
  const int n = mesh().axis_size(axis);
  const int64_t size = whole.dim(dim) / n;
  std::vector<int64_t> start(static_cast<size_t>(whole.rank()), 0);
  std::vector<int64_t> sizes(whole.shape().dims().begin(), whole.shape().dims().end());
  start[static_cast<size_t>(dim)] = size * mesh().axis_index(axis);
  sizes[static_cast<size_t>(dim)] = size;
  autograd::NoGradGuard no_grad;
  return ops::slice(whole, start, sizes);
}

// Every position's `block` along `axis`, joined along `dim` (no record).
Tensor gather_blocks(const Tensor& block, int axis, int dim) {
  check_float32(block, "replicate");
  MeshContext& m = mesh();
  const int n = m.axis_size(axis);
  const int64_t count = block.numel();
  Tensor all = Tensor::empty({count * n}, kFloat32);
  m.all_gather(block, all, axis);
  if (dim == 0) {
    Shape whole = block.shape();
    whole[0] *= n;
    return all.view(whole);
  }
  std::vector<Tensor> parts;
  for (int p = 0; p < n; ++p) parts.push_back(all.first_axis_slice(p * count, (p + 1) * count).view(block.shape()));
  autograd::NoGradGuard no_grad;
  return ops::concatenate(parts, dim);
}

// The sharding of a result: `like`'s axis, along `dim` of a tensor of `global_shape`.
Sharding result_sharding(const Sharding& like, int dim, Shape global_shape) {
  return Sharding{like.axis, dim, std::move(global_shape)};
}

Tensor gather_all(const Tensor& g) { return is_sharded(g) ? replicate(g) : g; }

}  // namespace

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

Tensor matmul(const Tensor& a, const Tensor& b, const MatmulOptions& options) {
  const bool plain = !options.transpose_a && !options.transpose_b && a.rank() >= 2 && b.rank() == 2;
  const int last = plain ? a.rank() - 1 : 0;
  if (plain && is_sharded(b)) {
    const Sharding& sb = sharding_of(b);
    if (sb.dim == 1) {  // column-sharded kernel: each device makes its columns of the result
      Shape out_shape = a.shape();
      out_shape[last] = b.dim(1);
      return from_local(ops::matmul(copy_to_axis(replicate(a), sb.axis), to_local(b)),
                        result_sharding(sb, last, out_shape));
    }
    // Row-sharded kernel: each device's rows of the inner dimension give a partial sum.
    const bool matching = is_sharded(a) && sharding_of(a).axis == sb.axis && sharding_of(a).dim == last;
    const Tensor a_block = matching ? to_local(a) : to_local(shard(replicate(a), sb.axis, last));
    return reduce_from_axis(ops::matmul(a_block, to_local(b)), sb.axis);
  }
  if (plain && is_sharded(a)) {
    const Sharding& sa = sharding_of(a);
    if (sa.dim == last) {
      return reduce_from_axis(ops::matmul(to_local(a), to_local(shard(b, sa.axis, 0))), sa.axis);
    }
    Shape out_shape = a.shape();
    out_shape[last] = b.dim(1);
    return from_local(ops::matmul(to_local(a), copy_to_axis(b, sa.axis)), result_sharding(sa, sa.dim, out_shape));
  }
  return ops::matmul(replicate(a), replicate(b), options);
}

Tensor reshape(const Tensor& x, const std::vector<int64_t>& new_shape) {
  const Sharding& s = sharding_of(x);
  const int n = mesh().axis_size(s.axis);
  // The global shape asked for, with a -1 resolved.
  std::vector<int64_t> shape = new_shape;
  int64_t known = 1;
  for (int64_t d : shape) known *= d < 0 ? 1 : d;
  for (int64_t& d : shape) {
    if (d < 0 && known > 0) d = x.shape().numel() / known;
  }
  int64_t before = 1;
  for (int d = 0; d < s.dim; ++d) before *= x.dim(d);
  int64_t prefix = 1;
  for (size_t e = 0; e < shape.size(); ++e) {
    if (prefix == before && shape[e] % n == 0 && shape[e] > 1) {
      std::vector<int64_t> block = shape;
      block[e] /= n;
      const Sharding result{s.axis, static_cast<int>(e), Shape(shape)};
      return from_local(ops::reshape(to_local(x), block), result);
    }
    prefix *= shape[e];
    if (prefix > before) break;
  }
  return ops::reshape(replicate(x), new_shape);
}

Tensor take(const Tensor& x, const Tensor& indices, int axis) {
  const Sharding& s = sharding_of(x);
  const int a = x.shape().normalize_axis(axis, "take");
  if (is_sharded(indices)) return ops::take(x, replicate(indices), axis);
  if (s.dim != a) {
    Shape out_shape;
    for (int d = 0; d < a; ++d) out_shape.push_back(x.dim(d));
    for (int64_t d : indices.shape().dims()) out_shape.push_back(d);
    for (int d = a + 1; d < x.rank(); ++d) out_shape.push_back(x.dim(d));
    const int dim = s.dim < a ? s.dim : s.dim - 1 + indices.rank();
    return from_local(ops::take(to_local(x), indices, axis), result_sharding(s, dim, out_shape));
  }
  if (a != 0) return ops::take(replicate(x), indices, axis);
  // A table sharded by rows: gather the rows held here, zeros for the others (one extra
  // zero row that every absent index points at), and sum over the axis.
  const std::vector<int64_t> ids = indices.to_vector<int64_t>();
  const int64_t rows = x.dim(0), held = rows / mesh().axis_size(s.axis), first = held * mesh().axis_index(s.axis);
  std::vector<int64_t> here, where;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= rows) {
      throw_error<IndexError>("take: index {} is out of range [0, {}) at position {}", ids[i], rows, i);
    }
    const bool mine = ids[i] >= first && ids[i] < first + held;
    where.push_back(mine ? static_cast<int64_t>(here.size()) : -1);
    if (mine) here.push_back(ids[i] - first);
  }
  for (int64_t& w : where) {
    if (w < 0) w = static_cast<int64_t>(here.size());
  }
  const auto as_tensor = [](const std::vector<int64_t>& v, const Shape& shape) {
    Tensor t = Tensor::empty(shape, kInt64);
    std::copy(v.begin(), v.end(), t.data<int64_t>());
    return t;
  };
  Tensor rows_here = ops::take(to_local(x), as_tensor(here, {static_cast<int64_t>(here.size())}), 0);
  Shape zero_row = rows_here.shape();
  zero_row[0] = 1;
  const Tensor padded = ops::concatenate({rows_here, zeros(zero_row, x.dtype())}, 0);
  return reduce_from_axis(ops::take(padded, as_tensor(where, indices.shape()), 0), s.axis);
}

AttentionOutputs dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                       const AttentionOptions& options) {
  const bool by_heads = is_sharded(query) && is_sharded(key) && is_sharded(value) && sharding_of(query).dim == 2 &&
                        sharding_of(key).dim == 2 && sharding_of(value).dim == 2 &&
                        sharding_of(key).axis == sharding_of(query).axis &&
                        sharding_of(value).axis == sharding_of(query).axis && !is_sharded(options.mask) &&
                        !is_sharded(options.dropout_mask);
  if (!by_heads) {
    AttentionOptions whole = options;
    whole.mask = replicate(options.mask);
    whole.dropout_mask = replicate(options.dropout_mask);
    return ops::dot_product_attention(replicate(query), replicate(key), replicate(value), whole);
  }
  const int axis = sharding_of(query).axis;
  // The masks are whole: each device takes its heads' rows where they have a head axis.
  const auto heads_of = [&](const Tensor& mask) {
    if (!mask.defined() || mask.rank() < 4 || mask.dim(1) == 1) return mask;
    return shard_block(shard(mask, axis, 1));
  };
  AttentionOptions local = options;
  local.mask = heads_of(options.mask);
  local.dropout_mask = heads_of(options.dropout_mask);
  AttentionOutputs out = ops::dot_product_attention(to_local(query), to_local(key), to_local(value), local);
  Shape output_shape = query.shape();
  output_shape[3] = value.dim(3);
  const Shape probability_shape{query.dim(0), query.dim(2), query.dim(1), key.dim(1)};
  return {from_local(out.output, result_sharding(sharding_of(query), 2, output_shape)),
          from_local(out.probabilities, result_sharding(sharding_of(query), 1, probability_shape))};
}

}  // namespace chorus::ops::sharded
