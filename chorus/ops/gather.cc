// Index ops: one_hot, take (gather, with its scatter-add gradient, and its rule for a
// sharded table) and top_k, on the kernels of backend/cpu/gather_kernels.h.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/gather_kernels.h"
#include "chorus/backend/cpu/top_k_kernels.h"
#include "chorus/core/creation.h"
#include "chorus/jit/tracer.h"
#include "chorus/ops/reduce_plan.h"
#include "chorus/ops/reduction.h"
#include "chorus/ops/shape_ops.h"
#include "chorus/ops/sharded_ops.h"
#include "chorus/profiler/profiler.h"

namespace chorus::ops {
namespace {

using internal::from_float32;
using internal::to_float32;

void check_indices(const Tensor& indices, const char* op) {
  if (!is_integer(indices.dtype())) {
    throw_error<DTypeError>("{}: expected integer indices (int32 or int64), got {}", op, dtype_name(indices.dtype()));
  }
}

// Calls fn(const I* data) with the typed index array of an int32 or int64 tensor.
template <class Fn>
decltype(auto) with_indices(const Tensor& indices, Fn&& fn) {
  if (indices.dtype() == kInt32) return fn(indices.data<int32_t>());
  return fn(indices.data<int64_t>());
}

// x viewed as (outer, x.shape[axis], row) around `axis`.
struct TakeView {
  int64_t outer = 1, size = 1, row = 1, count = 1;
};

// dx = zeros like x with g's rows added at the gathered positions (duplicates add up).
// The zeros are the kernel's own first pass, so that a compiled step starts each run
// from them.
Tensor take_grad(const Tensor& g, const Tensor& indices, const Shape& x_shape, const TakeView& v) {
  const Tensor gf = to_float32(g);
  Tensor dx = Tensor::empty(x_shape, kFloat32);
  jit::launch("take_grad", {gf, indices}, {dx}, [v](auto in, auto out) {
    float* dx_data = out[0].template data<float>();
    std::fill(dx_data, dx_data + out[0].numel(), 0.0f);
    if (in[0].numel() == 0) return;
    with_indices(in[1], [&](const auto* idx) {
      backend::cpu::scatter_add_rows(in[0].template data<float>(), v.outer, v.count, v.row, idx, v.size, dx_data);
    });
  });
  return from_float32(dx, g.dtype());
}

// out = the rows of `x` (viewed as v) at `indices`; throws IndexError naming the first
// index out of range, before writing (and at every run of a compiled step).
void gather_rows_checked(const Tensor& x, const Tensor& indices, const TakeView& v, const Tensor& out) {
  with_indices(indices, [&](const auto* idx) {
    const int64_t bad = backend::cpu::find_out_of_range(idx, v.count, v.size);
    if (bad >= 0) {
      throw_error<IndexError>("take: index {} is out of range [0, {}) at position {}", static_cast<int64_t>(idx[bad]),
                              v.size, bad);
    }
    if (out.numel() == 0) return;
    const int64_t row_bytes = v.row * static_cast<int64_t>(dtype_size(x.dtype()));
    backend::cpu::gather_rows(x.raw_data(), v.outer, v.size, row_bytes, idx, v.count, out.raw_data());
  });
}

}  // namespace

Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype) {
  check_indices(indices, "one_hot");
  if (num_classes <= 0) throw_error<ValueError>("one_hot: expected num_classes >= 1, got {}", num_classes);
  Shape shape = indices.shape();
  if (shape.rank() == kMaxRank) {
    throw_error<ShapeError>("one_hot: indices of shape {} leave no room for the class axis (rank <= {})",
                            shape.to_string(), kMaxRank);
  }
  shape.push_back(num_classes);
  Tensor out = Tensor::empty(shape, dtype);
  if (out.numel() == 0) return out;
  alignas(8) unsigned char one[8];
  visit_dtype(dtype, [&](auto v) {
    using T = decltype(v);
    const T value = [] {
      if constexpr (std::is_same_v<T, bfloat16>) {
        return bfloat16(1.f);
      } else {
        return T(1);
      }
    }();
    std::memcpy(one, &value, sizeof(T));
  });
  with_indices(indices, [&](const auto* idx) {
    backend::cpu::one_hot(idx, indices.numel(), num_classes, dtype_size(dtype), one, out.raw_data());
  });
  return out;
}

// take(x, indices, axis) for a sharded x (the rules of sharded_ops.h): a table sharded
// by rows (axis 0, a vocabulary split over devices) gathers the rows it holds and
// all-reduces; one sharded along another dimension gathers blockwise.
namespace sharded {
namespace {

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

}  // namespace
}  // namespace sharded

Tensor take(const Tensor& x, const Tensor& indices, int axis) {
  if (sharded::any(x, indices)) return sharded::take(x, indices, axis);
  profiler::Scope event("op", "take");
  check_not_string("take", x.dtype());
  check_indices(indices, "take");
  const int a = x.shape().normalize_axis(axis, "take");
  TakeView v;
  for (int d = 0; d < a; ++d) v.outer *= x.shape()[d];
  v.size = x.shape()[a];
  for (int d = a + 1; d < x.rank(); ++d) v.row *= x.shape()[d];
  v.count = indices.numel();
  Shape shape;
  for (int d = 0; d < a; ++d) shape.push_back(x.shape()[d]);
  for (int64_t dim : indices.shape().dims()) shape.push_back(dim);
  for (int d = a + 1; d < x.rank(); ++d) shape.push_back(x.shape()[d]);
  Tensor out = Tensor::empty(shape, x.dtype());
  jit::launch("take", {x, indices}, {out},
              [v](auto in, auto result) { gather_rows_checked(in[0], in[1], v, result[0]); });
  autograd::record("take", {x, indices}, {out}, [&] {
    return [indices, x_shape = x.shape(), v](std::span<const Tensor> g, const autograd::BackwardContext& context) {
      // A row gather of a float32 table: its gradient can be the gathered rows' gradients
      // themselves, with no table-sized tensor (an Embedding's sparse gradient).
      if (v.outer == 1 && g[0].dtype() == kFloat32 && context.accepts_indexed_slices(0)) {
        Shape rows{v.count};
        for (int d = 1; d < x_shape.rank(); ++d) rows.push_back(x_shape[d]);
        context.add_indexed_slices(0, {.values = g[0].view(rows), .indices = indices.view(Shape{v.count}),
                                       .dense_shape = x_shape});
        return std::vector<Tensor>{Tensor(), Tensor()};
      }
      return std::vector<Tensor>{take_grad(g[0], indices, x_shape, v), Tensor()};
    };
  });
  return out;
}

std::pair<Tensor, Tensor> top_k(const Tensor& x, int64_t k, bool sorted) {
  if (sharded::any(x)) return top_k(sharded::replicate(x), k, sorted);
  check_not_uint8("top_k", x.dtype());
  if (x.dtype() == kBool) {
    throw_error<DTypeError>("top_k: expected a numeric dtype (float32, bfloat16, int32 or int64), got bool");
  }
  if (x.rank() == 0) throw_error<ShapeError>("top_k: expected an input of rank >= 1, got shape ()");
  const int64_t n = x.dim(-1);
  if (k < 1 || k > n) {
    throw_error<ValueError>("top_k: expected 1 <= k <= {} (the last dimension of shape {}), got k={}", n,
                            x.shape().to_string(), k);
  }
  Shape shape = x.shape();
  shape[shape.rank() - 1] = k;
  Tensor values = Tensor::empty(shape, x.dtype()), indices = Tensor::empty(shape, kInt64);
  const int64_t rows = x.numel() / n;
  if (rows > 0) {
    visit_dtype(x.dtype(), [&](auto v) {
      using T = decltype(v);
      if constexpr (!std::is_same_v<T, bool> && !std::is_same_v<T, uint8_t>) {
        backend::cpu::top_k_rows(x.data<T>(), rows, n, k, sorted, values.data<T>(), indices.data<int64_t>());
      }
    });
  }
  autograd::record("top_k", {x}, {values, indices}, [&] {
    return [indices, x_shape = x.shape(), rows, k, n](std::span<const Tensor> g) {
      if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
      const Tensor gf = to_float32(g[0]);
      Tensor dx = zeros(x_shape, kFloat32);
      backend::cpu::scatter_rows(gf.data<float>(), indices.data<int64_t>(), rows, k, n, dx.data<float>());
      return std::vector<Tensor>{from_float32(dx, g[0].dtype())};
    };
  });
  return {values, indices};
}

}  // namespace chorus::ops
