// Elementwise ops that select or convert rather than compute: clip, where, cast, and
// their gradients.
#include <cmath>

#include "chorus/autograd/tape.h"
#include "chorus/core/creation.h"
#include "chorus/jit/tracer.h"
#include "chorus/ops/elementwise.h"
#include "chorus/ops/elementwise_detail.h"
#include "chorus/ops/reduction.h"
#include "chorus/ops/sharded_ops.h"

namespace chorus::ops {

using detail::BinaryOp;
using detail::KernelParams;
using detail::UnaryOp;

// Integer inputs clip to the integers inside [min_value, max_value].
Tensor clip(const Tensor& x, double min_value, double max_value) {
  if (sharded::any(x)) return sharded::elementwise([=](const Tensor& t) { return clip(t, min_value, max_value); }, x);
  detail::check_defined("clip", x, "x");
  if (!(min_value <= max_value)) {
    throw_error<ValueError>("clip: expected min_value <= max_value. Received: min_value={}, max_value={}", min_value,
                            max_value);
  }
  const KernelParams bounds{.lo = min_value, .hi = max_value};
  Tensor out = detail::unary_forward("clip", UnaryOp::kClip, x, bounds);
  autograd::record("clip", {x}, {out}, [&] {
    return [x, bounds](std::span<const Tensor> g) {
      return std::vector<Tensor>{detail::backward_kernel(BinaryOp::kClipGrad, x, g[0], bounds)};
    };
  });
  return out;
}

Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y) {
  if (sharded::any(condition, x, y)) {
    return where(sharded::replicate(condition), sharded::replicate(x), sharded::replicate(y));
  }
  detail::check_defined("where", condition, "condition");
  detail::check_defined("where", x, "x");
  detail::check_defined("where", y, "y");
  if (condition.dtype() != kBool) {
    throw_error<DTypeError>("where: expected a bool condition, got dtype {}", dtype_name(condition.dtype()));
  }
  detail::check_same_dtype("where", x, y);
  const Shape shape = broadcast_shapes(broadcast_shapes(condition.shape(), x.shape(), "where"), y.shape(), "where");
  Tensor out = Tensor::empty(shape, x.dtype());
  jit::launch("where", {condition, x, y}, {out},
              [](auto in, auto result) { backend::cpu::where(in[0], in[1], in[2], result[0]); });
  autograd::record("where", {condition, x, y}, {out}, [&] {
    return [condition, sx = x.shape(), sy = y.shape()](std::span<const Tensor> g) {
      const Tensor zero = scalar(0, g[0].dtype());
      return std::vector<Tensor>{Tensor(), sum_to(where(condition, g[0], zero), sx),
                                 sum_to(where(condition, zero, g[0]), sy)};
    };
  });
  return out;
}

Tensor cast(const Tensor& x, DType dtype) {
  if (sharded::any(x)) return sharded::elementwise([=](const Tensor& t) { return cast(t, dtype); }, x);
  detail::check_defined("cast", x, "x");
  if (dtype == kString) {
    throw_error<DTypeError>("cast: expected a numeric target dtype, got string (cannot cast {} to string)",
                            dtype_name(x.dtype()));
  }
  Tensor out;
  if (x.dtype() == dtype) {
    out = x.view(x.shape());  // nothing to convert: a fresh handle on the same storage
  } else {
    out = Tensor::empty(x.shape(), dtype);
    jit::launch("cast", {x}, {out}, [](auto in, auto result) { backend::cpu::cast(in[0], result[0]); });
  }
  if (is_floating(x.dtype()) && is_floating(dtype)) {
    autograd::record("cast", {x}, {out}, [&] {
      return [from = x.dtype()](std::span<const Tensor> g) { return std::vector<Tensor>{cast(g[0], from)}; };
    });
  }
  return out;
}

}  // namespace chorus::ops
