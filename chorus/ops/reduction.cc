// sum, mean, max, min, argmax, and the broadcast pair sum_to / broadcast_to, with their
// gradients. Reductions run as passes over (outer, reduced, inner) views (reduce_plan.h)
// on the kernels of backend/cpu/reduce_kernels.h.
#include "chorus/ops/reduction.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/broadcast_kernels.h"
#include "chorus/backend/cpu/reduce_kernels.h"
#include "chorus/core/creation.h"
#include "chorus/jit/tracer.h"
#include "chorus/ops/reduce_plan.h"
#include "chorus/ops/sharded_ops.h"
#include "chorus/profiler/profiler.h"

namespace chorus::ops {
namespace {

using backend::cpu::ReduceKind;
using internal::ReducePlan;

constexpr int64_t kReductionGrain = 32768;

void check_numeric(const Tensor& x, const char* op) {
  check_not_string(op, x.dtype());
  check_not_uint8(op, x.dtype());
  if (x.dtype() == kBool) {
    throw_error<DTypeError>("{}: expected a numeric dtype (float32, bfloat16, int32 or int64), got bool", op);
  }
}

// Runs the plan's passes over x into `out` (plan.out's elements, x's dtype): in float32
// for floating T, and in T for integers; floating results are multiplied by `scale`
// before rounding (mean). The last pass writes `out` itself where its dtype allows.
template <class T>
void reduce_into(ReduceKind kind, const Tensor& x, const ReducePlan& plan, double scale, const Tensor& out) {
  using Acc = std::conditional_t<std::is_same_v<T, bfloat16>, float, T>;
  const DType acc_dtype = dtype_of<Acc>;
  Tensor current;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const internal::ReduceStep& s = plan.steps[i];
    const bool into_out = i + 1 == plan.steps.size() && out.dtype() == acc_dtype;
    Tensor next = into_out ? out : Tensor::empty(Shape{s.outer * s.inner}, acc_dtype);
    if (current.defined()) {
      backend::cpu::reduce(kind, current.data<Acc>(), next.data<Acc>(), s.outer, s.reduced, s.inner);
    } else {
      backend::cpu::reduce(kind, x.data<T>(), next.data<Acc>(), s.outer, s.reduced, s.inner);
    }
    current = next;
  }
  if constexpr (std::is_same_v<Acc, float>) {
    if (scale != 1) {
      float* r = current.data<float>();
      const float f = static_cast<float>(scale);
      for (int64_t i = 0; i < current.numel(); ++i) r[i] *= f;
    }
    if (!current.same(out)) out.copy_from(internal::from_float32(current, out.dtype()).view(out.shape()));
  }
}

void reduce_kernel(ReduceKind kind, const ReducePlan& plan, double scale, const Tensor& x, const Tensor& out) {
  visit_dtype(x.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (!std::is_same_v<T, bool> && !std::is_same_v<T, uint8_t>) {  // rejected by check_numeric
      reduce_into<T>(kind, x, plan, scale, out);
    }
  });
}

// The reduction `plan` describes, in x's dtype and shaped plan.out (see reduce_into).
// Handles empty inputs: an empty axis sums to 0, means to NaN, and has no max or min
// (ValueError).
Tensor reduce_tensor(ReduceKind kind, const Tensor& x, const ReducePlan& plan, const char* op, double scale = 1) {
  if (plan.out.numel() == 0) return Tensor::empty(plan.out, x.dtype());
  if (plan.count == 0) {
    if (kind != ReduceKind::kSum) {
      throw_error<ValueError>("{}: cannot reduce an empty axis (input shape {})", op, x.shape().to_string());
    }
    return full(plan.out, scale == 1 ? 0.0 : std::numeric_limits<double>::quiet_NaN(), x.dtype());
  }
  Tensor out = Tensor::empty(plan.out, x.dtype());
  if (plan.steps.empty()) {  // each output is its one input
    jit::launch(op, {x}, {out}, [](auto in, auto result) { result[0].copy_from(in[0].view(result[0].shape())); });
    return out;
  }
  reduce_kernel(kind, plan, scale, x, out);
  jit::record(op, {x}, {out}, [&] {
    return jit::Kernel([kind, plan, scale](auto in, auto result) { reduce_kernel(kind, plan, scale, in[0], result[0]); });
  });
  return out;
}

// dst (shape `full`, x's dtype) = g (shape `kept`) broadcast and scaled.
Tensor broadcast_scaled(const Tensor& g, const Shape& kept, const Shape& full, float scale) {
  const Tensor gf = internal::to_float32(g);
  Tensor out = Tensor::empty(full, kFloat32);
  jit::launch("broadcast_scale", {gf}, {out}, [kept, full, scale](auto in, auto result) {
    backend::cpu::broadcast_scale(in[0].template data<float>(), kept, result[0].template data<float>(), full, scale);
  });
  return internal::from_float32(out, g.dtype());
}

// Gradient of max/min: g goes to the positions equal to their slice's extreme, split
// evenly among ties (as TensorFlow does); a NaN extreme goes to its NaN positions.
Tensor extreme_grad(const Tensor& x, const Tensor& y, const Tensor& g, const std::vector<int>& axes) {
  const ReducePlan plan = internal::plan_reduction(x.shape(), axes, /*keepdims=*/true);
  const Tensor xf = internal::to_float32(x), yf = internal::to_float32(y), gf = internal::to_float32(g);
  Tensor mask = Tensor::empty(x.shape(), kFloat32);
  const float *xs = xf.data<float>(), *ys = yf.data<float>();
  float* m = mask.data<float>();
  backend::cpu::for_each_broadcast_run(x.shape(), plan.kept, kReductionGrain, [&](int64_t fo, int64_t ko, int64_t len, int64_t step) {
    for (int64_t i = 0; i < len; ++i) {
      const float a = xs[fo + i], b = ys[ko + i * step];
      m[fo + i] = (a == b || (a != a && b != b)) ? 1.f : 0.f;
    }
  });
  Tensor share = reduce_tensor(ReduceKind::kSum, mask, plan, "max");  // ties per slice
  float* q = share.data<float>();
  const float* gs = gf.data<float>();
  for (int64_t k = 0; k < share.numel(); ++k) q[k] = gs[k] / q[k];
  backend::cpu::for_each_broadcast_run(x.shape(), plan.kept, kReductionGrain, [&](int64_t fo, int64_t ko, int64_t len, int64_t step) {
    for (int64_t i = 0; i < len; ++i) m[fo + i] *= q[ko + i * step];
  });
  return internal::from_float32(mask, x.dtype());
}

// sum, max and min: the forward pass and its record.
Tensor reduce_op(ReduceKind kind, const char* op, const Tensor& x, const Axes& axis, bool keepdims) {
  profiler::Scope event("op", op);
  check_numeric(x, op);
  const ReducePlan plan = internal::plan_reduction(x.shape(), axis.resolve(x.shape(), op), keepdims);
  Tensor out = reduce_tensor(kind, x, plan, op);
  if (kind == ReduceKind::kSum) {
    autograd::record("sum", {x}, {out}, [&] {
      return [shape = x.shape(), kept = plan.kept](std::span<const Tensor> g) {
        return std::vector<Tensor>{broadcast_to(g[0].view(kept), shape)};
      };
    });
  } else {
    autograd::record(kind == ReduceKind::kMax ? "max" : "min", {x}, {out}, [&] {
      return [x, out, axes = plan.axes](std::span<const Tensor> g) {
        return std::vector<Tensor>{extreme_grad(x, out, g[0], axes)};
      };
    });
  }
  return out;
}

// Whether `small` broadcasts to `big` (right-aligned dims equal or 1).
bool broadcasts_to(const Shape& small, const Shape& big) {
  if (small.rank() > big.rank()) return false;
  const int lead = big.rank() - small.rank();
  for (int d = 0; d < small.rank(); ++d) {
    if (small[d] != 1 && small[d] != big[d + lead]) return false;
  }
  return true;
}

}  // namespace

Tensor sum(const Tensor& x, const Axes& axis, bool keepdims) {
  if (sharded::any(x)) return sum(sharded::replicate(x), axis, keepdims);
  return reduce_op(ReduceKind::kSum, "sum", x, axis, keepdims);
}

Tensor max(const Tensor& x, const Axes& axis, bool keepdims) {
  if (sharded::any(x)) return max(sharded::replicate(x), axis, keepdims);
  return reduce_op(ReduceKind::kMax, "max", x, axis, keepdims);
}

Tensor min(const Tensor& x, const Axes& axis, bool keepdims) {
  if (sharded::any(x)) return min(sharded::replicate(x), axis, keepdims);
  return reduce_op(ReduceKind::kMin, "min", x, axis, keepdims);
}

Tensor mean(const Tensor& x, const Axes& axis, bool keepdims) {
  if (sharded::any(x)) return mean(sharded::replicate(x), axis, keepdims);
  internal::check_floating(x, "mean");
  const ReducePlan plan = internal::plan_reduction(x.shape(), axis.resolve(x.shape(), "mean"), keepdims);
  const double scale = 1.0 / static_cast<double>(plan.count);  // inf for an empty axis: NaN means
  Tensor out = reduce_tensor(ReduceKind::kSum, x, plan, "mean", scale);
  autograd::record("mean", {x}, {out}, [&] {
    return [shape = x.shape(), kept = plan.kept, scale](std::span<const Tensor> g) {
      return std::vector<Tensor>{broadcast_scaled(g[0], kept, shape, static_cast<float>(scale))};
    };
  });
  return out;
}

Tensor argmax(const Tensor& x, int axis, bool keepdims) {
  if (sharded::any(x)) return argmax(sharded::replicate(x), axis, keepdims);
  check_numeric(x, "argmax");
  const int a = x.shape().normalize_axis(axis, "argmax");
  const ReducePlan plan = internal::plan_reduction(x.shape(), {a}, keepdims);
  Tensor out = Tensor::empty(plan.out, kInt64);
  if (out.numel() == 0) return out;
  if (plan.count == 0) {
    throw_error<ValueError>("argmax: cannot reduce an empty axis (input shape {})", x.shape().to_string());
  }
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < a; ++d) outer *= x.shape()[d];
  for (int d = a + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  visit_dtype(x.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (!std::is_same_v<T, bool> && !std::is_same_v<T, uint8_t>) {  // both rejected by check_numeric
      backend::cpu::argmax(x.data<T>(), out.data<int64_t>(), outer, plan.count, inner);
    }
  });
  return out;
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (sharded::any(x) && x.shape() == shape) return x;
  if (sharded::any(x)) return sum_to(sharded::replicate(x), shape);
  if (!broadcasts_to(shape, x.shape())) {
    throw_error<ShapeError>("sum_to: shape {} does not broadcast to the input shape {}", shape.to_string(),
                            x.shape().to_string());
  }
  Tensor out;
  if (x.shape() == shape) {
    out = x.view(shape);
  } else {
    check_numeric(x, "sum_to");
    const int lead = x.rank() - shape.rank();
    std::vector<int> axes;
    for (int d = 0; d < x.rank(); ++d) {
      if (d < lead || (shape[d - lead] == 1 && x.shape()[d] != 1)) axes.push_back(d);
    }
    out = reduce_tensor(ReduceKind::kSum, x, internal::plan_reduction(x.shape(), axes, true), "sum_to").view(shape);
  }
  autograd::record("sum_to", {x}, {out}, [&] {
    return [x_shape = x.shape()](std::span<const Tensor> g) {
      return std::vector<Tensor>{broadcast_to(g[0], x_shape)};
    };
  });
  return out;
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  if (sharded::any(x)) return broadcast_to(sharded::replicate(x), shape);
  if (!broadcasts_to(x.shape(), shape)) {
    throw_error<ShapeError>("broadcast_to: cannot broadcast shape {} to {}", x.shape().to_string(), shape.to_string());
  }
  Tensor out;
  if (x.shape() == shape) {
    out = x.view(shape);
  } else {
    out = Tensor::empty(shape, x.dtype());
    if (out.numel() > 0) {
      jit::launch("broadcast_to", {x}, {out}, [](auto in, auto result) {
        backend::cpu::broadcast_copy(in[0].raw_data(), in[0].shape(), result[0].raw_data(), result[0].shape(),
                                     dtype_size(in[0].dtype()));
      });
    }
  }
  autograd::record("broadcast_to", {x}, {out}, [&] {
    return [x_shape = x.shape()](std::span<const Tensor> g) { return std::vector<Tensor>{sum_to(g[0], x_shape)}; };
  });
  return out;
}

}  // namespace chorus::ops
