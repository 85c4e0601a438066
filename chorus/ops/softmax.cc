// logsumexp, softmax and log_softmax with their gradients: fused, max-shifted row
// kernels (backend/cpu/softmax_kernels.h). bfloat16 inputs compute in float32 and round
// the result.
#include <limits>

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/softmax_kernels.h"
#include "chorus/core/creation.h"
#include "chorus/jit/tracer.h"
#include "chorus/ops/reduce_plan.h"
#include "chorus/ops/reduction.h"
#include "chorus/ops/sharded_ops.h"
#include "chorus/profiler/profiler.h"

namespace chorus::ops {
namespace {

using internal::from_float32;
using internal::to_float32;

// x viewed as (outer, n, inner) around `axis`.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisView view_around(const Shape& shape, int axis) {
  AxisView v;
  for (int d = 0; d < axis; ++d) v.outer *= shape[d];
  v.n = shape[axis];
  for (int d = axis + 1; d < shape.rank(); ++d) v.inner *= shape[d];
  return v;
}

Tensor logsumexp_grad(const Tensor& x, const Tensor& lse, const Tensor& g, const Shape& kept) {
  const Tensor xf = to_float32(x), lf = to_float32(lse), gf = to_float32(g);
  Tensor dx = Tensor::empty(x.shape(), kFloat32);
  if (dx.numel() > 0) {
    backend::cpu::logsumexp_grad(xf.data<float>(), x.shape(), lf.data<float>(), gf.data<float>(), kept,
                                 dx.data<float>());
  }
  return from_float32(dx, x.dtype());
}

using Forward = void (*)(const float*, float*, int64_t, int64_t, int64_t, backend::cpu::Isa);
using Backward = void (*)(const float*, const float*, float*, int64_t, int64_t, int64_t, backend::cpu::Isa);

// softmax and log_softmax: y = forward(x) along `axis`; backward(y, g) gives dx.
Tensor softmax_like(const char* op, Forward forward, Backward backward, const Tensor& x, int axis) {
  profiler::Scope event("op", op);
  internal::check_floating(x, op);
  const AxisView v = view_around(x.shape(), x.shape().normalize_axis(axis, op));
  const Tensor xf = to_float32(x);
  Tensor y = Tensor::empty(x.shape(), kFloat32);
  if (y.numel() > 0) {
    jit::launch(op, {xf}, {y}, [forward, v](auto in, auto out) {
      forward(in[0].template data<float>(), out[0].template data<float>(), v.outer, v.n, v.inner,
              backend::cpu::active_isa());
    });
  }
  Tensor out = from_float32(y, x.dtype());
  autograd::record(op, {x}, {out}, [&] {
    return [out, v, backward](std::span<const Tensor> g) {
      const Tensor yf = to_float32(out), gf = to_float32(g[0]);
      Tensor dx = Tensor::empty(out.shape(), kFloat32);
      if (dx.numel() > 0) {
        jit::launch("softmax_grad", {yf, gf}, {dx}, [backward, v](auto in, auto out) {
          backward(in[0].template data<float>(), in[1].template data<float>(), out[0].template data<float>(), v.outer,
                   v.n, v.inner, backend::cpu::active_isa());
        });
      }
      return std::vector<Tensor>{from_float32(dx, out.dtype())};
    };
  });
  return out;
}

}  // namespace

Tensor logsumexp(const Tensor& x, const Axes& axis, bool keepdims) {
  if (sharded::any(x)) return logsumexp(sharded::replicate(x), axis, keepdims);
  internal::check_floating(x, "logsumexp");
  const internal::ReducePlan plan =
      internal::plan_reduction(x.shape(), axis.resolve(x.shape(), "logsumexp"), keepdims);
  Tensor out;
  if (plan.out.numel() == 0) {
    out = Tensor::empty(plan.out, x.dtype());
  } else if (plan.count == 0) {
    out = full(plan.out, -std::numeric_limits<double>::infinity(), x.dtype());  // log of an empty sum
  } else if (plan.steps.empty()) {
    out = x.clone().view(plan.out);  // one element per slice: logsumexp(a) = a
  } else {
    // logsumexp over several axis groups is logsumexp of logsumexps, one group a pass.
    Tensor current = to_float32(x);
    for (const internal::ReduceStep& s : plan.steps) {
      Tensor next = Tensor::empty(Shape{s.outer * s.inner}, kFloat32);
      backend::cpu::logsumexp(current.data<float>(), next.data<float>(), s.outer, s.reduced, s.inner);
      current = next;
    }
    out = from_float32(current, x.dtype()).view(plan.out);
  }
  autograd::record("logsumexp", {x}, {out}, [&] {
    return [x, out, kept = plan.kept](std::span<const Tensor> g) {
      return std::vector<Tensor>{logsumexp_grad(x, out, g[0], kept)};
    };
  });
  return out;
}

Tensor softmax(const Tensor& x, int axis) {
  if (sharded::any(x)) return sharded::along_axis([=](const Tensor& t) { return softmax(t, axis); }, x, axis);
  return softmax_like("softmax", &backend::cpu::softmax, &backend::cpu::softmax_grad, x, axis);
}

Tensor log_softmax(const Tensor& x, int axis) {
  if (sharded::any(x)) return sharded::along_axis([=](const Tensor& t) { return log_softmax(t, axis); }, x, axis);
  return softmax_like("log_softmax", &backend::cpu::log_softmax, &backend::cpu::log_softmax_grad, x, axis);
}

}  // namespace chorus::ops
