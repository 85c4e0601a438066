// Shape ops: views for reshape/expand_dims/squeeze, copies through the backend's copy
// kernels for the rest. Every copy goes by element size, so each op takes every dtype.
// reshape keeps a sharded tensor blockwise where it can (its rule below); the other ops
// gather a sharded input first.
#include "chorus/ops/shape_ops.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/copy_kernels.h"
#include "chorus/core/creation.h"
#include "chorus/jit/tracer.h"
#include "chorus/ops/sharded_ops.h"

namespace chorus::ops {
namespace {

std::vector<Tensor> replicated(const std::vector<Tensor>& xs) {
  std::vector<Tensor> out;
  for (const Tensor& x : xs) out.push_back(sharded::replicate(x));
  return out;
}

// "(4, -1)", "(3,)", "()": a requested shape, which may hold -1, printed as Python does.
template <class T>
std::string tuple_string(const std::vector<T>& v) {
  if (v.size() == 1) return fmt::format("({},)", v[0]);
  return fmt::format("({})", fmt::join(v, ", "));
}

// A view of x with another shape, recorded as op `op` whose gradient views g back to x's shape.
Tensor reshaped_view(const char* op, const Tensor& x, const Shape& shape) {
  Tensor out = x.view(shape);
  autograd::record(op, {x}, {out}, [&] {
    return [shape = x.shape()](std::span<const Tensor> g) { return std::vector<Tensor>{g[0].view(shape)}; };
  });
  return out;
}

// x's shape with a size-`size` axis inserted at `axis` (already in [0, rank]).
Shape insert_axis(const Shape& shape, int axis, int64_t size) {
  std::vector<int64_t> dims = shape.to_vector();
  dims.insert(dims.begin() + axis, size);
  return Shape(dims);
}

// Maps a new-axis position in [-rank - 1, rank] to [0, rank]; IndexError otherwise.
int normalize_new_axis(const char* op, const Shape& shape, int axis) {
  const int rank = shape.rank();
  if (axis < -rank - 1 || axis > rank) {
    throw_error<IndexError>("{}: axis {} is out of range [{}, {}] for shape {}", op, axis, -rank - 1, rank,
                            shape.to_string());
  }
  if (rank == kMaxRank) {
    throw_error<ShapeError>("{}: cannot add an axis to shape {}: rank {} is the maximum", op, shape.to_string(),
                            kMaxRank);
  }
  return axis < 0 ? axis + rank + 1 : axis;
}

using backend::cpu::extract_block;
using backend::cpu::insert_block;

// Checks that every tensor of a list has the first one's dtype; throws DTypeError naming `op`.
void check_same_dtype(const char* op, const std::vector<Tensor>& xs) {
  if (xs.empty()) throw_error<ValueError>("{}: expected at least one tensor, got an empty list", op);
  for (size_t i = 1; i < xs.size(); ++i) {
    if (xs[i].dtype() != xs[0].dtype()) {
      throw_error<DTypeError>("{}: tensor {} has dtype {}, expected {} like tensor 0", op, i,
                              dtype_name(xs[i].dtype()), dtype_name(xs[0].dtype()));
    }
  }
}

// Cuts x along `axis` at `bounds` (b0 = 0 <= b1 <= ... <= bn = size): parts [b_k, b_k+1).
// The gradient writes each part's gradient back into its place (zeros where undefined).
std::vector<Tensor> split_at(const Tensor& x, int axis, const std::vector<int64_t>& bounds) {
  std::vector<Tensor> parts;
  std::vector<int64_t> start(static_cast<size_t>(x.rank()), 0);
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    Shape block = x.shape();
    block[axis] = bounds[k + 1] - bounds[k];
    start[axis] = bounds[k];
    parts.push_back(extract_block(x, start, block));
  }
  autograd::record("split", std::span<const Tensor>(&x, 1), parts, [&] {
    return [shape = x.shape(), dtype = x.dtype(), axis, bounds](std::span<const Tensor> g) {
      const bool all_defined = std::all_of(g.begin(), g.end(), [](const Tensor& t) { return t.defined(); });
      Tensor dx = all_defined ? Tensor::empty(shape, dtype) : zeros(shape, dtype);
      std::vector<int64_t> start(static_cast<size_t>(shape.rank()), 0);
      for (size_t k = 0; k < g.size(); ++k) {
        start[axis] = bounds[k];
        if (g[k].defined()) insert_block(dx, start, g[k], g[k].shape());
      }
      return std::vector<Tensor>{dx};
    };
  });
  return parts;
}

// Resolves Keras slice sizes (-1: to the end) and checks that the block fits in `shape`.
Shape checked_block(const char* op, const Shape& shape, const std::vector<int64_t>& start,
                    const std::vector<int64_t>& sizes) {
  const int rank = shape.rank();
  if (static_cast<int>(start.size()) != rank || static_cast<int>(sizes.size()) != rank) {
    throw_error<ValueError>("{}: expected {} start indices and {} sizes for shape {}, got {} and {}", op, rank, rank,
                            shape.to_string(), start.size(), sizes.size());
  }
  Shape block = shape;
  for (int d = 0; d < rank; ++d) {
    const int64_t size = sizes[d] == -1 ? shape[d] - start[d] : sizes[d];
    if (start[d] < 0 || size < 0 || start[d] + size > shape[d]) {
      throw_error<IndexError>("{}: axis {}: start {} and size {} do not fit in a dimension of size {} (shape {})", op,
                              d, start[d], sizes[d], shape[d], shape.to_string());
    }
    block[d] = size;
  }
  return block;
}

}  // namespace

// reshape of a sharded x (the rules of sharded_ops.h): a reshape that keeps the sharded
// dimension's blocks contiguous stays blockwise: the dimensions before it keep their
// product and the new dimension there divides over the axis ((B, T, N * H) sharded on its
// last dimension to (B, T, N, H) sharded by heads, and back). Any other reshape gathers.
namespace sharded {
namespace {

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

}  // namespace
}  // namespace sharded

Tensor reshape(const Tensor& x, const std::vector<int64_t>& new_shape) {
  if (sharded::any(x)) return sharded::reshape(x, new_shape);
  if (new_shape.size() > static_cast<size_t>(kMaxRank)) {
    throw_error<ShapeError>("reshape: shape {} has rank {}, more than the maximum rank {}", tuple_string(new_shape),
                            new_shape.size(), kMaxRank);
  }
  std::vector<int64_t> dims = new_shape;
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1 && inferred >= 0) {
      throw_error<ValueError>("reshape: only one dimension can be -1, got shape {}", tuple_string(new_shape));
    } else if (dims[i] == -1) {
      inferred = static_cast<int>(i);
    } else if (dims[i] < 0) {
      throw_error<ValueError>("reshape: dimension {} is negative in shape {}", dims[i], tuple_string(new_shape));
    } else {
      known *= dims[i];
    }
  }
  if (inferred >= 0 && known != 0) dims[inferred] = x.numel() / known;
  const bool fits = inferred >= 0 ? known != 0 && known * dims[inferred] == x.numel() : known == x.numel();
  if (!fits) {
    throw_error<ShapeError>("reshape: cannot reshape a tensor of shape {} ({} elements) into shape {}",
                            x.shape().to_string(), x.numel(), tuple_string(new_shape));
  }
  return reshaped_view("reshape", x, Shape(dims));
}

Tensor expand_dims(const Tensor& x, int axis) {
  if (sharded::any(x)) return expand_dims(sharded::replicate(x), axis);
  const int a = normalize_new_axis("expand_dims", x.shape(), axis);
  return reshaped_view("expand_dims", x, insert_axis(x.shape(), a, 1));
}

Tensor squeeze(const Tensor& x) {
  if (sharded::any(x)) return squeeze(sharded::replicate(x));
  Shape out;
  for (int64_t d : x.shape()) {
    if (d != 1) out.push_back(d);
  }
  return reshaped_view("squeeze", x, out);
}

Tensor squeeze(const Tensor& x, int axis) {
  if (sharded::any(x)) return squeeze(sharded::replicate(x), axis);
  const int a = x.shape().normalize_axis(axis, "squeeze");
  if (x.shape()[a] != 1) {
    throw_error<ShapeError>("squeeze: cannot squeeze axis {} of shape {}: expected size 1, got {}", axis,
                            x.shape().to_string(), x.shape()[a]);
  }
  std::vector<int64_t> dims = x.shape().to_vector();
  dims.erase(dims.begin() + a);
  return reshaped_view("squeeze", x, Shape(dims));
}

Tensor transpose(const Tensor& x, const std::vector<int>& axes) {
  if (sharded::any(x)) return transpose(sharded::replicate(x), axes);
  const int rank = x.rank();
  std::vector<int> perm(static_cast<size_t>(rank));
  if (axes.empty()) {
    std::iota(perm.rbegin(), perm.rend(), 0);
  } else {
    if (static_cast<int>(axes.size()) != rank) {
      throw_error<ValueError>("transpose: expected {} axes for shape {}, got {} axes {}", rank, x.shape().to_string(),
                              axes.size(), tuple_string(axes));
    }
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int d = 0; d < rank; ++d) {
      perm[d] = x.shape().normalize_axis(axes[d], "transpose");
      if (seen[perm[d]]) {
        throw_error<ValueError>("transpose: axes {} are not a permutation: axis {} repeats", tuple_string(axes),
                                axes[d]);
      }
      seen[perm[d]] = true;
    }
  }
  Shape out_shape;
  for (int axis : perm) out_shape.push_back(x.shape()[axis]);
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  backend::cpu::permute(x.raw_data(), x.shape(), perm, out.raw_data(), dtype_size(x.dtype()));
  jit::record("transpose", {x}, {out}, [&] {
    return jit::Kernel([perm](auto in, auto result) {
      backend::cpu::permute(in[0].raw_data(), in[0].shape(), perm, result[0].raw_data(), dtype_size(in[0].dtype()));
    });
  });
  autograd::record("transpose", {x}, {out}, [&] {
    std::vector<int> inverse(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) inverse[perm[d]] = static_cast<int>(d);
    return [inverse](std::span<const Tensor> g) { return std::vector<Tensor>{transpose(g[0], inverse)}; };
  });
  return out;
}

Tensor concatenate(const std::vector<Tensor>& xs, int axis) {
  if (std::any_of(xs.begin(), xs.end(), [](const Tensor& t) { return is_sharded(t); })) {
    return concatenate(replicated(xs), axis);
  }
  check_same_dtype("concatenate", xs);
  const Shape& first = xs[0].shape();
  if (first.rank() == 0) throw_error<ShapeError>("concatenate: cannot concatenate scalars (tensor 0 has shape ())");
  const int a = first.normalize_axis(axis, "concatenate");
  Shape out_shape = first;
  out_shape[a] = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    Shape expected = first;
    expected[a] = xs[i].rank() == first.rank() ? xs[i].shape()[a] : 0;
    if (xs[i].shape() != expected) {
      throw_error<ShapeError>("concatenate: tensor {} has shape {}, which does not match shape {} of tensor 0 outside "
                              "axis {}",
                              i, xs[i].shape().to_string(), first.to_string(), axis);
    }
    out_shape[a] += xs[i].shape()[a];
  }
  Tensor out = Tensor::empty(out_shape, xs[0].dtype(), xs[0].device());
  std::vector<int64_t> bounds{0};
  std::vector<int64_t> start(static_cast<size_t>(first.rank()), 0);
  for (const Tensor& x : xs) {
    start[a] = bounds.back();
    insert_block(out, start, x, x.shape());
    bounds.push_back(bounds.back() + x.shape()[a]);
  }
  autograd::record("concatenate", std::span<const Tensor>(xs), std::span<const Tensor>(&out, 1), [&] {
    return [a, bounds](std::span<const Tensor> g) { return split_at(g[0], a, bounds); };
  });
  return out;
}

Tensor stack(const std::vector<Tensor>& xs, int axis) {
  if (std::any_of(xs.begin(), xs.end(), [](const Tensor& t) { return is_sharded(t); })) {
    return stack(replicated(xs), axis);
  }
  check_same_dtype("stack", xs);
  const Shape& shape = xs[0].shape();
  const int a = normalize_new_axis("stack", shape, axis);
  for (size_t i = 1; i < xs.size(); ++i) {
    if (xs[i].shape() != shape) {
      throw_error<ShapeError>("stack: tensor {} has shape {}, expected {} like tensor 0", i,
                              xs[i].shape().to_string(), shape.to_string());
    }
  }
  const int64_t n = static_cast<int64_t>(xs.size());
  const Shape part = insert_axis(shape, a, 1);
  Tensor out = Tensor::empty(insert_axis(shape, a, n), xs[0].dtype(), xs[0].device());
  std::vector<int64_t> start(static_cast<size_t>(part.rank()), 0);
  for (int64_t i = 0; i < n; ++i) {
    start[a] = i;
    insert_block(out, start, xs[i], part);
  }
  autograd::record("stack", std::span<const Tensor>(xs), std::span<const Tensor>(&out, 1), [&] {
    return [a, n, shape, part](std::span<const Tensor> g) {
      std::vector<Tensor> grads;
      std::vector<int64_t> start(static_cast<size_t>(part.rank()), 0);
      for (int64_t i = 0; i < n; ++i) {
        start[a] = i;
        grads.push_back(extract_block(g[0], start, part).view(shape));
      }
      return grads;
    };
  });
  return out;
}

std::vector<Tensor> split(const Tensor& x, int64_t sections, int axis) {
  if (sharded::any(x)) return split(sharded::replicate(x), sections, axis);
  const int a = x.shape().normalize_axis(axis, "split");
  if (sections <= 0) throw_error<ValueError>("split: sections must be positive, got {}", sections);
  const int64_t size = x.shape()[a];
  if (size % sections != 0) {
    throw_error<ValueError>("split: {} sections do not divide axis {} of size {}", sections, axis, size);
  }
  std::vector<int64_t> bounds;
  for (int64_t k = 0; k <= sections; ++k) bounds.push_back(k * (size / sections));
  return split_at(x, a, bounds);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& indices, int axis) {
  if (sharded::any(x)) return split(sharded::replicate(x), indices, axis);
  const int a = x.shape().normalize_axis(axis, "split");
  const int64_t size = x.shape()[a];
  std::vector<int64_t> bounds{0};
  for (int64_t index : indices) {
    const int64_t cut = std::clamp<int64_t>(index < 0 ? index + size : index, 0, size);
    if (cut < bounds.back()) {
      throw_error<ValueError>("split: indices {} must not decrease (after counting negative ones from the end of "
                              "axis {} of size {})",
                              tuple_string(indices), axis, size);
    }
    bounds.push_back(cut);
  }
  bounds.push_back(size);
  return split_at(x, a, bounds);
}

Tensor slice(const Tensor& x, const std::vector<int64_t>& start_indices, const std::vector<int64_t>& shape) {
  if (sharded::any(x)) return slice(sharded::replicate(x), start_indices, shape);
  const Shape block = checked_block("slice", x.shape(), start_indices, shape);
  Tensor out = Tensor::empty(block, x.dtype());
  jit::launch("slice", {x}, {out}, [start_indices](auto in, auto result) {
    const std::vector<int64_t> origin(static_cast<size_t>(result[0].rank()), 0);
    backend::cpu::copy_block(in[0].raw_data(), in[0].shape(), start_indices, result[0].raw_data(), result[0].shape(),
                             origin, result[0].shape(), dtype_size(in[0].dtype()));
  });
  autograd::record("slice", {x}, {out}, [&] {
    return [full = x.shape(), start_indices](std::span<const Tensor> g) {
      // x's shape: zeros, with g copied into the sliced block (one kernel, so that a
      // compiled step zeroes it at every run).
      Tensor dx = Tensor::empty(full, g[0].dtype());
      jit::launch("slice_grad", {g[0]}, {dx}, [start_indices](auto in, auto result) {
        std::memset(result[0].raw_data(), 0, result[0].nbytes());
        insert_block(result[0], start_indices, in[0], in[0].shape());
      });
      return std::vector<Tensor>{dx};
    };
  });
  return out;
}

Tensor slice_update(const Tensor& x, const std::vector<int64_t>& start_indices, const Tensor& updates) {
  if (sharded::any(x, updates)) return slice_update(sharded::replicate(x), start_indices, sharded::replicate(updates));
  if (updates.dtype() != x.dtype()) {
    throw_error<DTypeError>("slice_update: updates have dtype {}, expected {} like the inputs",
                            dtype_name(updates.dtype()), dtype_name(x.dtype()));
  }
  if (updates.rank() != x.rank()) {
    throw_error<ShapeError>("slice_update: updates of shape {} do not have the rank of inputs of shape {}",
                            updates.shape().to_string(), x.shape().to_string());
  }
  checked_block("slice_update", x.shape(), start_indices, updates.shape().to_vector());
  Tensor out = x.clone();
  insert_block(out, start_indices, updates, updates.shape());
  autograd::record("slice_update", {x, updates}, {out}, [&] {
    return [start_indices, block = updates.shape()](std::span<const Tensor> g) {
      return std::vector<Tensor>{slice_update(g[0], start_indices, zeros(block, g[0].dtype())),
                                 slice(g[0], start_indices, block.to_vector())};
    };
  });
  return out;
}

}  // namespace chorus::ops
