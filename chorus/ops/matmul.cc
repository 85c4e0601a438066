// ops::matmul: resolves NumPy matmul semantics (1-D promotion, batch broadcasting,
// transposes as strides) into one backend::cpu::MatmulProblem, runs it on oneDNN, and
// records the gradient. Shapes below: a (.., M, K), b (.., K, N), out (.., M, N), with
// a stored as (.., K, M) when transpose_a and b as (.., N, K) when transpose_b.
#include "chorus/ops/matmul.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/matmul.h"
#include "chorus/core/creation.h"
#include "chorus/jit/tracer.h"
#include "chorus/ops/operators.h"
#include "chorus/ops/reduction.h"
#include "chorus/ops/sharded_ops.h"
#include "chorus/profiler/profiler.h"

namespace chorus::ops {
namespace {

// The shape matmul computes with: a 1-D operand gets a unit axis (a: (K,) -> (1, K),
// b: (K,) -> (K, 1)) that the result then drops.
Shape promoted_shape(const Shape& s, bool is_a) {
  if (s.rank() != 1) return s;
  return is_a ? Shape{1, s[0]} : Shape{s[0], 1};
}

// Everything matmul needs to know about its operands' shapes.
struct Layout {
  Shape pa, pb;       // promoted shapes
  bool ta, tb;        // effective transposes (ignored for 1-D operands)
  int64_t m, k, n;
  Shape batch;        // broadcast batch axes of the result
  Shape out;          // the result's shape (1-D promotions dropped)
  Shape promoted_out; // batch + (M, N)
};

void check_dtypes(const Tensor& a, const Tensor& b) {
  check_not_string("matmul", a.dtype());
  check_not_string("matmul", b.dtype());
  if (a.dtype() != b.dtype()) {
    throw_error<DTypeError>("matmul: dtypes differ: {} and {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
  }
  if (a.dtype() != kFloat32 && a.dtype() != kBFloat16) {
    throw_error<DTypeError>("matmul: expected float32 or bfloat16 operands, got {}", dtype_name(a.dtype()));
  }
}

std::string transpose_note(bool ta, bool tb) {
  if (ta && tb) return " with transpose_a and transpose_b";
  if (ta) return " with transpose_a";
  return tb ? " with transpose_b" : "";
}

// Right-aligned NumPy broadcast of the batch axes (all but the last two).
Shape broadcast_batch(const Shape& pa, const Shape& pb, const Shape& a, const Shape& b) {
  const int ra = pa.rank() - 2, rb = pb.rank() - 2, r = std::max(ra, rb);
  Shape batch;
  for (int i = 0; i < r; ++i) {
    const int ia = i - (r - ra), ib = i - (r - rb);
    const int64_t da = ia >= 0 ? pa[ia] : 1, db = ib >= 0 ? pb[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      throw_error<ShapeError>("matmul: batch dimensions do not broadcast: {} @ {}", a.to_string(), b.to_string());
    }
    batch.push_back(da == 1 ? db : da);
  }
  return batch;
}

Layout resolve(const Tensor& a, const Tensor& b, const MatmulOptions& options) {
  if (a.rank() == 0 || b.rank() == 0) {
    throw_error<ShapeError>("matmul: expected operands of rank >= 1, got shapes {} and {}", a.shape().to_string(),
                            b.shape().to_string());
  }
  Layout l;
  l.pa = promoted_shape(a.shape(), true);
  l.pb = promoted_shape(b.shape(), false);
  l.ta = options.transpose_a && a.rank() >= 2;
  l.tb = options.transpose_b && b.rank() >= 2;
  l.m = l.pa.dim(l.ta ? -1 : -2);
  l.k = l.pa.dim(l.ta ? -2 : -1);
  const int64_t kb = l.pb.dim(l.tb ? -1 : -2);
  l.n = l.pb.dim(l.tb ? -2 : -1);
  if (l.k != kb) {
    throw_error<ShapeError>("matmul: inner dimensions differ: {} @ {}{}: {} vs {}", a.shape().to_string(),
                            b.shape().to_string(), transpose_note(l.ta, l.tb), l.k, kb);
  }
  l.batch = broadcast_batch(l.pa, l.pb, a.shape(), b.shape());
  l.out = l.promoted_out = l.batch;
  l.promoted_out.push_back(l.m);
  l.promoted_out.push_back(l.n);
  if (a.rank() >= 2) l.out.push_back(l.m);
  if (b.rank() >= 2) l.out.push_back(l.n);
  return l;
}

// Fills one operand's dims and strides in the problem: batch axes right-aligned to
// `batch` (kept axes only), matrix axes (rows, cols) read through `transposed` strides.
void fill_operand(const Shape& stored, bool transposed, const std::vector<int>& kept_batch, const Shape& batch,
                  std::array<int64_t, kMaxRank>& dims, std::array<int64_t, kMaxRank>& strides) {
  const auto s = contiguous_strides(stored);
  const int r = stored.rank(), lead = batch.rank() - (r - 2);
  int j = 0;
  for (int i : kept_batch) {
    const int src = i - lead;  // this operand's axis, or < 0 when it lacks the axis
    dims[j] = src >= 0 ? stored[src] : 1;
    strides[j] = src >= 0 ? s[src] : s[0] * stored[0];  // a missing axis: size 1, dense stride
    ++j;
  }
  const int row = transposed ? r - 1 : r - 2, col = transposed ? r - 2 : r - 1;
  dims[j] = stored[row];
  strides[j] = s[row];
  dims[j + 1] = stored[col];
  strides[j + 1] = s[col];
}

// The oneDNN problem for `l`. Batch axes of size 1 in the result are dropped, and when
// only a is batched (and not transposed) its batch folds into M: (B, M, K) @ (K, N) is
// one (B*M, K) @ (K, N) product, which oneDNN runs faster than B small ones.
backend::cpu::MatmulProblem make_problem(const Layout& l, DType dtype) {
  std::vector<int> kept;
  bool b_batched = false;
  const int lead_b = l.batch.rank() - (l.pb.rank() - 2);
  for (int i = 0; i < l.batch.rank(); ++i) {
    if (l.batch[i] == 1) continue;
    kept.push_back(i);
    if (i >= lead_b && l.pb[i - lead_b] != 1) b_batched = true;
  }
  backend::cpu::MatmulProblem p;
  p.dtype = dtype;
  if (!kept.empty() && !b_batched && !l.ta) {
    const int64_t rows = l.batch.numel() * l.m;
    p.a_dims = {rows, l.k};
    p.a_strides = {l.k, 1};
    kept.clear();
    fill_operand(l.pb, l.tb, kept, l.batch, p.b_dims, p.b_strides);
    p.c_dims = {rows, l.n};
    return p;
  }
  p.rank = static_cast<int>(kept.size()) + 2;
  fill_operand(l.pa, l.ta, kept, l.batch, p.a_dims, p.a_strides);
  fill_operand(l.pb, l.tb, kept, l.batch, p.b_dims, p.b_strides);
  for (size_t j = 0; j < kept.size(); ++j) p.c_dims[j] = l.batch[kept[j]];
  p.c_dims[p.rank - 2] = l.m;
  p.c_dims[p.rank - 1] = l.n;
  return p;
}

// dB = A^T @ G for a (M, K) @ (K, N) product, computed in the row blocks `stream` asks
// for; each block is handed over as soon as it is written, so its reduction across
// replicas overlaps computing the next. Row blocks of A^T @ G sum over the same M rows.
Tensor streamed_kernel_gradient(const Tensor& a, const Tensor& g, const autograd::RowStream& stream) {
  const int64_t m = a.dim(0), k = a.dim(1), n = g.dim(1);
  Tensor db = Tensor::empty({k, n}, a.dtype());
  const size_t element = dtype_size(a.dtype());
  int64_t begin = 0;
  for (const int64_t end : stream.row_ends()) {
    if (end <= begin) continue;
    if (m == 0) {
      std::memset(static_cast<char*>(db.raw_data()) + begin * n * element, 0, (end - begin) * n * element);
    } else {
      backend::cpu::MatmulProblem p;
      p.dtype = a.dtype();
      p.a_dims = {end - begin, m};  // rows [begin, end) of A^T: columns of A
      p.a_strides = {1, k};
      p.b_dims = {m, n};
      p.b_strides = {n, 1};
      p.c_dims = {end - begin, n};
      backend::cpu::matmul(p, static_cast<const char*>(a.raw_data()) + begin * element, g.raw_data(),
                           static_cast<char*>(db.raw_data()) + begin * n * element);
    }
    stream.rows_ready(db, end);
    begin = end;
  }
  return db;
}

// The gradients of one matmul: dA = G @ op(B)^T and dB = op(A)^T @ G, each written
// with transpose flags so that it comes out in its operand's stored layout, then summed
// over broadcast batch axes and reshaped back to the operand's (possibly 1-D) shape.
// An operand the tape does not track (a data batch) gets no gradient: its product is
// skipped, a fifth of an MLP step.
autograd::BackwardFn make_backward(const Tensor& a, const Tensor& b, const Layout& l) {
  const bool need_a = autograd::needs_gradient(a), need_b = autograd::needs_gradient(b);
  return [a, b, need_a, need_b, ta = l.ta, tb = l.tb, pa = l.pa, pb = l.pb,
          g_shape = l.promoted_out](std::span<const Tensor> g, const autograd::BackwardContext& context) {
    const Tensor a2 = a.view(pa), b2 = b.view(pb), g2 = g[0].view(g_shape);
    std::vector<Tensor> grads(2);
    // A Dense kernel's gradient goes first, in the row blocks its consumer asked for.
    const autograd::RowStream* stream = need_b ? context.row_stream(1) : nullptr;
    if (stream != nullptr && a.rank() == 2 && b.rank() == 2 && !ta && !tb && stream->row_ends().back() == b.dim(0)) {
      grads[1] = streamed_kernel_gradient(a, g[0], *stream);
    } else if (need_b) {
      // b stored (.., N, K) when tb: dB = G^T @ op(A); else (.., K, N): dB = op(A)^T @ G.
      Tensor db = tb ? matmul(g2, a2, {.transpose_a = true, .transpose_b = ta})
                     : matmul(a2, g2, {.transpose_a = !ta, .transpose_b = false});
      grads[1] = sum_to(db, pb).view(b.shape());
    }
    if (need_a) {
      // a stored (.., K, M) when ta: dA = op(B) @ G^T; else (.., M, K): dA = G @ op(B)^T.
      Tensor da = ta ? matmul(b2, g2, {.transpose_a = tb, .transpose_b = true})
                     : matmul(g2, b2, {.transpose_a = false, .transpose_b = !tb});
      grads[0] = sum_to(da, pa).view(a.shape());
    }
    return grads;
  };
}

}  // namespace

// matmul on sharded operands (the rules of sharded_ops.h), for a (.., K) @ b (K, N)
// without transposes: a column-sharded b makes each device's columns of the result with
// no communication; a row-sharded b (a cut to match) or an a sharded along K gives
// per-device partial sums that one all-reduce adds; an a sharded along another dimension
// stays blockwise against the whole b. Anything else is gathered first.
namespace sharded {
namespace {

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

}  // namespace
}  // namespace sharded

Tensor matmul(const Tensor& a, const Tensor& b, const MatmulOptions& options) {
  if (sharded::any(a, b)) return sharded::matmul(a, b, options);
  profiler::Scope event("op", "matmul");
  check_dtypes(a, b);
  const Layout l = resolve(a, b, options);
  Tensor out;
  if (l.k == 0) {
    out = zeros(l.out, a.dtype());  // an empty sum
  } else {
    out = Tensor::empty(l.out, a.dtype());
    if (out.numel() > 0) {
      jit::launch("matmul", {a, b}, {out}, [p = make_problem(l, a.dtype())](auto in, auto result) {
        backend::cpu::matmul(p, in[0].raw_data(), in[1].raw_data(), result[0].raw_data());
      });
    }
  }
  autograd::record("matmul", {a, b}, {out}, [&] { return make_backward(a, b, l); });
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b, const Tensor& bias, const MatmulOptions& options) {
  if (sharded::any(a, b) || sharded::any(bias)) return matmul(a, b, options) + bias;
  check_dtypes(a, b);
  const Layout l = resolve(a, b, options);
  // A 1-D b drops the result's N axis; its bias broadcasts as an add does.
  const bool fused = l.k > 0 && b.rank() >= 2 && bias.defined() && bias.rank() == 1 && bias.dim(0) == l.n &&
                     bias.dtype() == a.dtype();
  if (!fused) return matmul(a, b, options) + bias;
  profiler::Scope event("op", "matmul");
  Tensor out = Tensor::empty(l.out, a.dtype());
  if (out.numel() > 0) {
    backend::cpu::MatmulProblem p = make_problem(l, a.dtype());
    p.bias = true;
    jit::launch("matmul", {a, b, bias}, {out}, [p](auto in, auto result) {
      backend::cpu::matmul(p, in[0].raw_data(), in[1].raw_data(), result[0].raw_data(), in[2].raw_data());
    });
  }
  autograd::record("matmul", {a, b, bias}, {out}, [&] {
    return [product = make_backward(a, b, l), need_bias = autograd::needs_gradient(bias),
            n = l.n](std::span<const Tensor> g, const autograd::BackwardContext& context) {
      std::vector<Tensor> grads = product(g, context);
      grads.push_back(need_bias ? sum(g[0].view({g[0].numel() / std::max<int64_t>(n, 1), n}), 0) : Tensor());
      return grads;
    };
  });
  return out;
}

}  // namespace chorus::ops
