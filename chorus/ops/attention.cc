// ops::dot_product_attention: fused scaled dot-product attention and its gradient.
// Shapes (Keras's projected layout; heads sit next to the features):
//   query (B, T, N, Dk), key (B, S, N, Dk), value (B, S, N, Dv)
//   scores / probabilities P (B, N, T, S), contiguous; output O (B, T, N, Dv)
// Forward:  S = Q K^T (one batched matmul over (B, N), reading Q and K in place through
//           strides); per row: scale, mask, softmax (and dropout) in one pass;
//           O = P' V, written straight into the (B, T, N, Dv) layout.
// Backward: dP' = dO V^T;  dV = P'^T dO;  per row: dS = P * (dP - sum(dP * P)) * scale
//           with dP = dP' * dropout (+ a gradient reaching P itself), 0 where masked;
//           dQ = dS K;  dK = dS^T Q. Five batched matmuls and one row pass.
#include "chorus/ops/attention.h"

#include <array>
#include <cmath>
#include <string>

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/attention_kernels.h"
#include "chorus/backend/cpu/matmul.h"
#include "chorus/core/creation.h"
#include "chorus/ops/elementwise.h"
#include "chorus/ops/reduce_plan.h"
#include "chorus/ops/sharded_ops.h"

namespace chorus::ops {
namespace {

using internal::from_float32;
using internal::to_float32;
using AttentionDims = std::array<int64_t, 4>;

struct AttentionSizes {
  int64_t b = 0, n = 0, t = 0, s = 0, dk = 0, dv = 0;
  Shape scores() const { return Shape{b, n, t, s}; }
};

// A (B, X, N, D) buffer read as per-head matrices (B, N, X, D), or transposed (B, N, D, X).
AttentionDims heads_layout(int64_t x, int64_t n, int64_t d) { return {x * n * d, d, n * d, 1}; }
AttentionDims heads_layout_t(int64_t x, int64_t n, int64_t d) { return {x * n * d, d, 1, n * d}; }
// A contiguous (B, N, X, Y) buffer, or read transposed as (B, N, Y, X).
AttentionDims rows_layout(int64_t n, int64_t x, int64_t y) { return {n * x * y, x * y, y, 1}; }
AttentionDims rows_layout_t(int64_t n, int64_t x, int64_t y) { return {n * x * y, x * y, 1, y}; }

struct AttentionOperand {
  AttentionDims dims, strides;
  const float* data;
};

// c = a @ b over the (B, N) batch, c read through `c_strides` and filling all of `out`.
// An empty inner dimension gives zeros.
void attention_matmul(const AttentionOperand& a, const AttentionOperand& b, const AttentionDims& c_dims,
                      const AttentionDims& c_strides, Tensor& out) {
  if (out.numel() == 0) return;
  if (a.dims[3] == 0) {
    out.copy_from(zeros(out.shape()));
    return;
  }
  backend::cpu::MatmulProblem p;
  p.rank = 4;
  p.dtype = kFloat32;
  for (int i = 0; i < 4; ++i) {
    p.a_dims[i] = a.dims[i];
    p.a_strides[i] = a.strides[i];
    p.b_dims[i] = b.dims[i];
    p.b_strides[i] = b.strides[i];
    p.c_dims[i] = c_dims[i];
    p.c_strides[i] = c_strides[i];
  }
  backend::cpu::matmul(p, a.data, b.data, out.data<float>());
}

void check_attention_dtypes(const Tensor& q, const Tensor& k, const Tensor& v) {
  for (const Tensor* t : {&q, &k, &v}) {
    if (t->dtype() != kFloat32 && t->dtype() != kBFloat16) {
      throw_error<DTypeError>("dot_product_attention: expected float32 or bfloat16 query, key and value, got {}",
                              dtype_name(t->dtype()));
    }
  }
  if (q.dtype() != k.dtype() || q.dtype() != v.dtype()) {
    throw_error<DTypeError>("dot_product_attention: query, key and value dtypes differ: {}, {} and {}",
                            dtype_name(q.dtype()), dtype_name(k.dtype()), dtype_name(v.dtype()));
  }
}

AttentionSizes check_attention_shapes(const Tensor& q, const Tensor& k, const Tensor& v) {
  const std::string shapes = fmt::format("query {}, key {}, value {}", q.shape().to_string(), k.shape().to_string(),
                                         v.shape().to_string());
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) {
    throw_error<ShapeError>(
        "dot_product_attention: expected query (B, T, N, Dk), key (B, S, N, Dk) and value (B, S, N, Dv) of rank 4, "
        "got {}",
        shapes);
  }
  if (k.dim(0) != q.dim(0) || v.dim(0) != q.dim(0) || k.dim(2) != q.dim(2) || v.dim(2) != q.dim(2)) {
    throw_error<ShapeError>(
        "dot_product_attention: query, key and value must agree on the batch (axis 0) and heads (axis 2), got {}",
        shapes);
  }
  if (k.dim(1) != v.dim(1)) {
    throw_error<ShapeError>("dot_product_attention: key and value must have the same length (axis 1), got {}", shapes);
  }
  if (k.dim(3) != q.dim(3)) {
    throw_error<ShapeError>("dot_product_attention: query and key must have the same depth (axis 3), got {}", shapes);
  }
  return {q.dim(0), q.dim(2), q.dim(1), k.dim(1), q.dim(3), v.dim(3)};
}

// The keep-mask as float32 with strides over (B, N, T, S); stride 0 broadcasts.
struct AttentionMask {
  Tensor values;
  std::array<int64_t, 4> strides{};
};

AttentionMask resolve_attention_mask(const Tensor& mask, const AttentionSizes& z) {
  AttentionMask m;
  if (!mask.defined()) return m;
  const Shape target = z.scores();
  const int r = mask.rank();
  bool ok = r <= 4;
  for (int i = 0; ok && i < r; ++i) {
    const int64_t d = mask.dim(i), want = target[4 - r + i];
    ok = d == 1 || d == want;
  }
  if (!ok) {
    throw_error<ShapeError>("dot_product_attention: mask of shape {} does not broadcast to the scores {}",
                            mask.shape().to_string(), target.to_string());
  }
  {
    autograd::NoGradGuard no_grad;  // the mask is data, never differentiated
    m.values = mask.dtype() == kFloat32 ? mask : cast(mask, kFloat32);
  }
  const auto s = contiguous_strides(mask.shape());
  for (int i = 0; i < r; ++i) m.strides[4 - r + i] = mask.dim(i) == 1 ? 0 : s[i];
  return m;
}

Tensor resolve_attention_dropout(const Tensor& dropout, const AttentionSizes& z) {
  if (!dropout.defined()) return dropout;
  if (dropout.shape() != z.scores()) {
    throw_error<ShapeError>("dot_product_attention: dropout_mask of shape {} differs from the scores {}",
                            dropout.shape().to_string(), z.scores().to_string());
  }
  autograd::NoGradGuard no_grad;
  return to_float32(dropout);
}

backend::cpu::AttentionRows attention_row_pass(const AttentionSizes& z, float scale, const AttentionMask& mask,
                                               const Tensor& dropout) {
  backend::cpu::AttentionRows r;
  r.batch = z.b;
  r.heads = z.n;
  r.queries = z.t;
  r.keys = z.s;
  r.scale = scale;
  if (mask.values.defined()) {
    r.mask = mask.values.data<float>();
    r.mask_strides = mask.strides;
  }
  if (dropout.defined()) r.dropout = dropout.data<float>();
  return r;
}

// Everything backward needs, in float32.
struct AttentionSaved {
  AttentionSizes z;
  float scale;
  Tensor q, k, v, probabilities, dropout;
  AttentionMask mask;
  bool need_q, need_k, need_v;
  DType dtype;
};

std::vector<Tensor> attention_backward(const AttentionSaved& sv, std::span<const Tensor> g) {
  const AttentionSizes& z = sv.z;
  const Tensor go = g[0].defined() ? to_float32(g[0]) : zeros({z.b, z.t, z.n, z.dv});  // dO (B, T, N, Dv)
  const Tensor gp = g[1].defined() ? to_float32(g[1]) : Tensor();                      // (B, N, T, S)
  std::vector<Tensor> grads(3);
  if (sv.need_v) {
    // dV (B, S, N, Dv) = P'^T (B, N, S, T) @ dO (B, N, T, Dv)
    const Tensor pd = sv.dropout.defined() ? multiply(sv.probabilities, sv.dropout) : sv.probabilities;
    Tensor dv = Tensor::empty({z.b, z.s, z.n, z.dv});
    attention_matmul({{z.b, z.n, z.s, z.t}, rows_layout_t(z.n, z.t, z.s), pd.data<float>()},
                   {{z.b, z.n, z.t, z.dv}, heads_layout(z.t, z.n, z.dv), go.data<float>()}, {z.b, z.n, z.s, z.dv},
                   heads_layout(z.s, z.n, z.dv), dv);
    grads[2] = from_float32(dv, sv.dtype);
  }
  if (!sv.need_q && !sv.need_k) return grads;
  // dS (B, N, T, S): dP' = dO (B, N, T, Dv) @ V^T (B, N, Dv, S), then the row pass.
  Tensor ds = Tensor::empty(z.scores());
  attention_matmul({{z.b, z.n, z.t, z.dv}, heads_layout(z.t, z.n, z.dv), go.data<float>()},
                 {{z.b, z.n, z.dv, z.s}, heads_layout_t(z.s, z.n, z.dv), sv.v.data<float>()}, {z.b, z.n, z.t, z.s},
                 rows_layout(z.n, z.t, z.s), ds);
  if (ds.numel() > 0) {
    backend::cpu::attention_softmax_backward(attention_row_pass(z, sv.scale, sv.mask, sv.dropout),
                                             sv.probabilities.data<float>(),
                                             gp.defined() ? gp.data<float>() : nullptr, ds.data<float>());
  }
  if (sv.need_q) {
    // dQ (B, T, N, Dk) = dS (B, N, T, S) @ K (B, N, S, Dk)
    Tensor dq = Tensor::empty({z.b, z.t, z.n, z.dk});
    attention_matmul({{z.b, z.n, z.t, z.s}, rows_layout(z.n, z.t, z.s), ds.data<float>()},
                   {{z.b, z.n, z.s, z.dk}, heads_layout(z.s, z.n, z.dk), sv.k.data<float>()}, {z.b, z.n, z.t, z.dk},
                   heads_layout(z.t, z.n, z.dk), dq);
    grads[0] = from_float32(dq, sv.dtype);
  }
  if (sv.need_k) {
    // dK (B, S, N, Dk) = dS^T (B, N, S, T) @ Q (B, N, T, Dk)
    Tensor dk = Tensor::empty({z.b, z.s, z.n, z.dk});
    attention_matmul({{z.b, z.n, z.s, z.t}, rows_layout_t(z.n, z.t, z.s), ds.data<float>()},
                   {{z.b, z.n, z.t, z.dk}, heads_layout(z.t, z.n, z.dk), sv.q.data<float>()}, {z.b, z.n, z.s, z.dk},
                   heads_layout(z.s, z.n, z.dk), dk);
    grads[1] = from_float32(dk, sv.dtype);
  }
  return grads;
}

}  // namespace

// Attention on sharded inputs (the rules of sharded_ops.h): query, key and value sharded
// by heads (dimension 2) over one axis run each device's heads (the probabilities sharded
// along their head dimension, 1); other shardings are gathered.
namespace sharded {
namespace {

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

}  // namespace
}  // namespace sharded

AttentionOutputs dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                       const AttentionOptions& options) {
  if (sharded::any(query, key, value) || sharded::any(options.mask, options.dropout_mask)) {
    return sharded::dot_product_attention(query, key, value, options);
  }
  check_attention_dtypes(query, key, value);
  const AttentionSizes z = check_attention_shapes(query, key, value);
  const float scale =
      static_cast<float>(options.scale != 0 ? options.scale
                                            : 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(z.dk, 1))));
  const AttentionMask mask = resolve_attention_mask(options.mask, z);
  const Tensor dropout = resolve_attention_dropout(options.dropout_mask, z);
  const Tensor q = to_float32(query), k = to_float32(key), v = to_float32(value);

  // P (B, N, T, S) = softmax(mask(Q (B, N, T, Dk) @ K^T (B, N, Dk, S) * scale))
  Tensor probabilities = Tensor::empty(z.scores());
  attention_matmul({{z.b, z.n, z.t, z.dk}, heads_layout(z.t, z.n, z.dk), q.data<float>()},
                 {{z.b, z.n, z.dk, z.s}, heads_layout_t(z.s, z.n, z.dk), k.data<float>()}, {z.b, z.n, z.t, z.s},
                 rows_layout(z.n, z.t, z.s), probabilities);
  Tensor dropped = dropout.defined() ? Tensor::empty(z.scores()) : probabilities;
  if (probabilities.numel() > 0) {
    backend::cpu::attention_softmax_forward(attention_row_pass(z, scale, mask, dropout), probabilities.data<float>(),
                                            dropout.defined() ? dropped.data<float>() : nullptr);
  }
  // O (B, T, N, Dv) = P' (B, N, T, S) @ V (B, N, S, Dv)
  Tensor output = Tensor::empty({z.b, z.t, z.n, z.dv});
  attention_matmul({{z.b, z.n, z.t, z.s}, rows_layout(z.n, z.t, z.s), dropped.data<float>()},
                 {{z.b, z.n, z.s, z.dv}, heads_layout(z.s, z.n, z.dv), v.data<float>()}, {z.b, z.n, z.t, z.dv},
                 heads_layout(z.t, z.n, z.dv), output);

  AttentionOutputs out{from_float32(output, query.dtype()), from_float32(probabilities, query.dtype())};
  autograd::record("dot_product_attention", {query, key, value}, {out.output, out.probabilities}, [&] {
    AttentionSaved sv{z,    scale, q, k, v, probabilities, dropout, mask, autograd::needs_gradient(query),
             autograd::needs_gradient(key), autograd::needs_gradient(value), query.dtype()};
    return [sv = std::move(sv)](std::span<const Tensor> g) { return attention_backward(sv, g); };
  });
  return out;
}

}  // namespace chorus::ops
