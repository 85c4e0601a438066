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

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/attention_kernels.h"
#include "chorus/backend/cpu/matmul.h"
#include "chorus/core/creation.h"
#include "chorus/jit/tracer.h"
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

// One batched product c (B, N, M, K) = a (B, N, M, L) @ b (B, N, L, K) over buffers read
// through strides (the layouts above): a description only, so that a compiled step's
// kernel owns a copy of it.
struct AttentionProduct {
  AttentionDims a_dims, a_strides, b_dims, b_strides, c_dims, c_strides;

  // out = a @ b, filling all of `out`; an empty inner dimension gives zeros.
  void operator()(const float* a, const float* b, const Tensor& out) const {
    if (out.numel() == 0) return;
    float* c = out.data<float>();
    if (a_dims[3] == 0) {
      std::fill(c, c + out.numel(), 0.0f);
      return;
    }
    backend::cpu::MatmulProblem p;
    p.rank = 4;
    p.dtype = kFloat32;
    for (int i = 0; i < 4; ++i) {
      p.a_dims[i] = a_dims[i];
      p.a_strides[i] = a_strides[i];
      p.b_dims[i] = b_dims[i];
      p.b_strides[i] = b_strides[i];
      p.c_dims[i] = c_dims[i];
      p.c_strides[i] = c_strides[i];
    }
    backend::cpu::matmul(p, a, b, c);
  }
  // out = in[0] @ in[1] as one launched kernel.
  void launch(const Tensor& a, const Tensor& b, const Tensor& out) const {
    jit::launch("attention_matmul", {a, b}, {out}, [product = *this](auto in, auto result) {
      product(in[0].template data<float>(), in[1].template data<float>(), result[0]);
    });
  }
};

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

// The products of the forward and backward passes, over the layouts above.
AttentionProduct scores_product(const AttentionSizes& z) {  // S = Q K^T
  return {{z.b, z.n, z.t, z.dk}, heads_layout(z.t, z.n, z.dk), {z.b, z.n, z.dk, z.s}, heads_layout_t(z.s, z.n, z.dk),
          {z.b, z.n, z.t, z.s},  rows_layout(z.n, z.t, z.s)};
}
AttentionProduct output_product(const AttentionSizes& z) {  // O = P' V
  return {{z.b, z.n, z.t, z.s},  rows_layout(z.n, z.t, z.s), {z.b, z.n, z.s, z.dv}, heads_layout(z.s, z.n, z.dv),
          {z.b, z.n, z.t, z.dv}, heads_layout(z.t, z.n, z.dv)};
}
AttentionProduct value_grad_product(const AttentionSizes& z) {  // dV = P'^T dO
  return {{z.b, z.n, z.s, z.t},  rows_layout_t(z.n, z.t, z.s), {z.b, z.n, z.t, z.dv}, heads_layout(z.t, z.n, z.dv),
          {z.b, z.n, z.s, z.dv}, heads_layout(z.s, z.n, z.dv)};
}
AttentionProduct dropped_grad_product(const AttentionSizes& z) {  // dP' = dO V^T
  return {{z.b, z.n, z.t, z.dv}, heads_layout(z.t, z.n, z.dv), {z.b, z.n, z.dv, z.s}, heads_layout_t(z.s, z.n, z.dv),
          {z.b, z.n, z.t, z.s},  rows_layout(z.n, z.t, z.s)};
}
AttentionProduct query_grad_product(const AttentionSizes& z) {  // dQ = dS K
  return {{z.b, z.n, z.t, z.s},  rows_layout(z.n, z.t, z.s), {z.b, z.n, z.s, z.dk}, heads_layout(z.s, z.n, z.dk),
          {z.b, z.n, z.t, z.dk}, heads_layout(z.t, z.n, z.dk)};
}
AttentionProduct key_grad_product(const AttentionSizes& z) {  // dK = dS^T Q
  return {{z.b, z.n, z.s, z.t},  rows_layout_t(z.n, z.t, z.s), {z.b, z.n, z.t, z.dk}, heads_layout(z.t, z.n, z.dk),
          {z.b, z.n, z.s, z.dk}, heads_layout(z.s, z.n, z.dk)};
}

// The row pass's settings; the mask and dropout tensors are a kernel's inputs, so a
// compiled step reads them where each run puts them.
struct AttentionRowPass {
  AttentionSizes z;
  float scale = 1;
  std::array<int64_t, 4> mask_strides{};
  bool has_mask = false, has_dropout = false;

  // The rows over `mask` and `dropout` (either may be undefined when absent).
  backend::cpu::AttentionRows rows(const Tensor& mask, const Tensor& dropout) const {
    backend::cpu::AttentionRows r;
    r.batch = z.b;
    r.heads = z.n;
    r.queries = z.t;
    r.keys = z.s;
    r.scale = scale;
    if (has_mask) {
      r.mask = mask.data<float>();
      r.mask_strides = mask_strides;
    }
    if (has_dropout) r.dropout = dropout.data<float>();
    return r;
  }
  // Appends the mask and dropout multipliers that are present to a kernel's inputs.
  void add_inputs(std::vector<Tensor>& inputs, const Tensor& mask, const Tensor& dropout) const {
    if (has_mask) inputs.push_back(mask);
    if (has_dropout) inputs.push_back(dropout);
  }
  // The mask and dropout among a kernel's inputs, from `first` on.
  std::pair<Tensor, Tensor> from_inputs(std::span<const Tensor> in, size_t first) const {
    const Tensor mask = has_mask ? in[first++] : Tensor();
    return {mask, has_dropout ? in[first] : Tensor()};
  }
};

// The forward pass as one kernel: in = {q, k, v[, mask][, dropout]} (float32),
// out = {probabilities, output[, dropped probabilities]}.
void attention_forward(const AttentionRowPass& pass, std::span<const Tensor> in, std::span<const Tensor> out) {
  const AttentionSizes& z = pass.z;
  const auto [mask, dropout] = pass.from_inputs(in, 3);
  const Tensor& probabilities = out[0];
  const Tensor& dropped = pass.has_dropout ? out[2] : probabilities;
  scores_product(z)(in[0].data<float>(), in[1].data<float>(), probabilities);
  if (probabilities.numel() > 0) {
    backend::cpu::attention_softmax_forward(pass.rows(mask, dropout), probabilities.data<float>(),
                                            pass.has_dropout ? dropped.data<float>() : nullptr);
  }
  output_product(z)(dropped.data<float>(), in[2].data<float>(), out[1]);
}

// dS, the gradient of the raw scores, as one kernel: in = {dO, V, P[, dP][, mask][,
// dropout]}, out = {dS}: dP' = dO V^T, then the row pass.
void attention_scores_grad(const AttentionRowPass& pass, bool has_extra, std::span<const Tensor> in,
                           std::span<const Tensor> out) {
  const Tensor& ds = out[0];
  dropped_grad_product(pass.z)(in[0].data<float>(), in[1].data<float>(), ds);
  if (ds.numel() == 0) return;
  const auto [mask, dropout] = pass.from_inputs(in, has_extra ? 4 : 3);
  backend::cpu::attention_softmax_backward(pass.rows(mask, dropout), in[2].data<float>(),
                                           has_extra ? in[3].data<float>() : nullptr, ds.data<float>());
}

// Everything backward needs, in float32.
struct AttentionSaved {
  AttentionRowPass pass;
  Tensor q, k, v, probabilities, mask, dropout;
  bool need_q, need_k, need_v;
  DType dtype;
};

std::vector<Tensor> attention_backward(const AttentionSaved& sv, std::span<const Tensor> g) {
  const AttentionSizes& z = sv.pass.z;
  const Tensor go = g[0].defined() ? to_float32(g[0]) : zeros({z.b, z.t, z.n, z.dv});  // dO (B, T, N, Dv)
  const Tensor gp = g[1].defined() ? to_float32(g[1]) : Tensor();                      // (B, N, T, S)
  std::vector<Tensor> grads(3);
  if (sv.need_v) {
    const Tensor pd = sv.dropout.defined() ? multiply(sv.probabilities, sv.dropout) : sv.probabilities;
    Tensor dv = Tensor::empty({z.b, z.s, z.n, z.dv});
    value_grad_product(z).launch(pd, go, dv);
    grads[2] = from_float32(dv, sv.dtype);
  }
  if (!sv.need_q && !sv.need_k) return grads;
  Tensor ds = Tensor::empty(z.scores());
  std::vector<Tensor> inputs{go, sv.v, sv.probabilities};
  if (gp.defined()) inputs.push_back(gp);
  sv.pass.add_inputs(inputs, sv.mask, sv.dropout);
  jit::launch("attention_scores_grad", inputs, std::span(&ds, 1),
              [pass = sv.pass, has_extra = gp.defined()](auto in, auto out) {
                attention_scores_grad(pass, has_extra, in, out);
              });
  if (sv.need_q) {
    Tensor dq = Tensor::empty({z.b, z.t, z.n, z.dk});
    query_grad_product(z).launch(ds, sv.k, dq);
    grads[0] = from_float32(dq, sv.dtype);
  }
  if (sv.need_k) {
    Tensor dk = Tensor::empty({z.b, z.s, z.n, z.dk});
    key_grad_product(z).launch(ds, sv.q, dk);
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
  const AttentionRowPass pass{.z = z,
                              .scale = scale,
                              .mask_strides = mask.strides,
                              .has_mask = mask.values.defined(),
                              .has_dropout = dropout.defined()};

  // P (B, N, T, S) = softmax(mask(Q K^T * scale)); O (B, T, N, Dv) = P' V.
  Tensor probabilities = Tensor::empty(z.scores()), output = Tensor::empty({z.b, z.t, z.n, z.dv});
  std::vector<Tensor> inputs{q, k, v}, outputs{probabilities, output};
  pass.add_inputs(inputs, mask.values, dropout);
  if (pass.has_dropout) outputs.push_back(Tensor::empty(z.scores()));
  jit::launch("dot_product_attention", inputs, outputs,
              [pass](auto in, auto result) { attention_forward(pass, in, result); });

  AttentionOutputs out{from_float32(output, query.dtype()), from_float32(probabilities, query.dtype())};
  autograd::record("dot_product_attention", {query, key, value}, {out.output, out.probabilities}, [&] {
    AttentionSaved sv{pass, q, k, v, probabilities, mask.values, dropout, autograd::needs_gradient(query),
                      autograd::needs_gradient(key), autograd::needs_gradient(value), query.dtype()};
    return [sv = std::move(sv)](std::span<const Tensor> g) { return attention_backward(sv, g); };
  });
  return out;
}

}  // namespace chorus::ops
