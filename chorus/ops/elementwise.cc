// Binary elementwise ops (arithmetic, power, comparisons) and their gradients, plus the
// shared checks and kernel launches of elementwise_detail.h. Broadcast gradients are
// summed back to each input's shape with sum_to.
#include "chorus/ops/elementwise.h"

#include "chorus/autograd/tape.h"
#include "chorus/core/creation.h"
#include "chorus/jit/tracer.h"
#include "chorus/ops/elementwise_detail.h"
#include "chorus/ops/reduction.h"
#include "chorus/ops/sharded_ops.h"
#include "chorus/profiler/profiler.h"

namespace chorus::ops {
namespace detail {

void check_defined(const char* op, const Tensor& t, const char* name) {
  if (!t.defined()) throw_error<ValueError>("{}: argument {} is an undefined tensor", op, name);
  check_not_string(op, t.dtype());  // every elementwise op, cast, loss and metric enters here
}

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) {
    throw_error<DTypeError>("{}: dtypes differ: {} and {}", op, dtype_name(a.dtype()), dtype_name(b.dtype()));
  }
}

void check_floating(const char* op, const Tensor& x) {
  if (!is_floating(x.dtype())) {
    throw_error<DTypeError>("{}: expected a floating dtype (float32 or bfloat16), got {}", op, dtype_name(x.dtype()));
  }
}

void check_numeric(const char* op, const Tensor& x) {
  check_not_uint8(op, x.dtype());
  if (x.dtype() == kBool) {
    throw_error<DTypeError>("{}: expected a numeric dtype (float32, bfloat16, int32 or int64), got {}", op,
                            dtype_name(x.dtype()));
  }
}

Tensor binary_forward(const char* op, BinaryOp code, const Tensor& a, const Tensor& b) {
  profiler::Scope event("op", op);
  check_defined(op, a, "a");
  check_defined(op, b, "b");
  check_same_dtype(op, a, b);
  if (!backend::cpu::binary_supported(code, a.dtype())) {
    if (code == BinaryOp::kPower) check_floating(op, a);
    check_numeric(op, a);
  }
  const Shape shape = a.shape() == b.shape() ? a.shape() : broadcast_shapes(a.shape(), b.shape(), op);
  if (code == BinaryOp::kDivide && is_integer(b.dtype()) && backend::cpu::contains_zero(b)) {
    throw_error<ValueError>("{}: integer division by zero", op);
  }
  Tensor out = Tensor::empty(shape, backend::cpu::binary_result_dtype(code, a.dtype()));
  jit::launch_binary(op, code, a, b, out);
  return out;
}

Tensor unary_forward(const char* op, UnaryOp code, const Tensor& x, KernelParams params) {
  profiler::Scope event("op", op);
  check_defined(op, x, "x");
  if (!backend::cpu::unary_supported(code, x.dtype())) {
    if (code >= UnaryOp::kExp) check_floating(op, x);
    check_numeric(op, x);
  }
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  jit::launch_unary(op, code, x, out, params);
  return out;
}

Tensor backward_kernel(BinaryOp code, const Tensor& saved, const Tensor& grad, KernelParams params) {
  if (saved.shape() != grad.shape() || saved.dtype() != grad.dtype()) {
    throw_error("elementwise backward: gradient of shape {} and dtype {} does not match its input {} {}",
                grad.shape().to_string(), dtype_name(grad.dtype()), saved.shape().to_string(),
                dtype_name(saved.dtype()));
  }
  Tensor out = Tensor::empty(saved.shape(), saved.dtype());
  jit::launch_binary("elementwise_grad", code, saved, grad, out, params);
  return out;
}

}  // namespace detail

using detail::binary_forward;
using detail::BinaryOp;

Tensor add(const Tensor& a, const Tensor& b) {
  if (sharded::any(a, b)) return sharded::elementwise(add, a, b);
  Tensor out = binary_forward("add", BinaryOp::kAdd, a, b);
  autograd::record("add", {a, b}, {out}, [&] {
    return [sa = a.shape(), sb = b.shape()](std::span<const Tensor> g) {
      return std::vector<Tensor>{sum_to(g[0], sa), sum_to(g[0], sb)};
    };
  });
  return out;
}

Tensor subtract(const Tensor& a, const Tensor& b) {
  if (sharded::any(a, b)) return sharded::elementwise(subtract, a, b);
  Tensor out = binary_forward("subtract", BinaryOp::kSubtract, a, b);
  autograd::record("subtract", {a, b}, {out}, [&] {
    return [sa = a.shape(), sb = b.shape()](std::span<const Tensor> g) {
      return std::vector<Tensor>{sum_to(g[0], sa), negative(sum_to(g[0], sb))};
    };
  });
  return out;
}

Tensor multiply(const Tensor& a, const Tensor& b) {
  if (sharded::any(a, b)) return sharded::elementwise(multiply, a, b);
  Tensor out = binary_forward("multiply", BinaryOp::kMultiply, a, b);
  autograd::record("multiply", {a, b}, {out}, [&] {
    return [a, b](std::span<const Tensor> g) {
      return std::vector<Tensor>{sum_to(multiply(g[0], b), a.shape()), sum_to(multiply(g[0], a), b.shape())};
    };
  });
  return out;
}

Tensor divide(const Tensor& a, const Tensor& b) {
  if (sharded::any(a, b)) return sharded::elementwise(divide, a, b);
  Tensor out = binary_forward("divide", BinaryOp::kDivide, a, b);
  autograd::record("divide", {a, b}, {out}, [&] {
    // d/da = g / b; d/db = -g a / b^2 = -(g / b) * out.
    return [sa = a.shape(), b, out](std::span<const Tensor> g) {
      Tensor ga = divide(g[0], b);
      return std::vector<Tensor>{sum_to(ga, sa), negative(sum_to(multiply(ga, out), b.shape()))};
    };
  });
  return out;
}

// Ties (a == b) send the whole gradient to a, as TensorFlow does; b gets the rest.
Tensor maximum(const Tensor& a, const Tensor& b) {
  if (sharded::any(a, b)) return sharded::elementwise(maximum, a, b);
  Tensor out = binary_forward("maximum", BinaryOp::kMaximum, a, b);
  autograd::record("maximum", {a, b}, {out}, [&] {
    return [a, b](std::span<const Tensor> g) {
      const Tensor to_a = greater_equal(a, b), zero = scalar(0, g[0].dtype());
      return std::vector<Tensor>{sum_to(where(to_a, g[0], zero), a.shape()),
                                 sum_to(where(to_a, zero, g[0]), b.shape())};
    };
  });
  return out;
}

Tensor minimum(const Tensor& a, const Tensor& b) {
  if (sharded::any(a, b)) return sharded::elementwise(minimum, a, b);
  Tensor out = binary_forward("minimum", BinaryOp::kMinimum, a, b);
  autograd::record("minimum", {a, b}, {out}, [&] {
    return [a, b](std::span<const Tensor> g) {
      const Tensor to_a = less_equal(a, b), zero = scalar(0, g[0].dtype());
      return std::vector<Tensor>{sum_to(where(to_a, g[0], zero), a.shape()),
                                 sum_to(where(to_a, zero, g[0]), b.shape())};
    };
  });
  return out;
}

// d/da = b a^(b-1) everywhere; d/db = a^b log(a) where a > 0 and 0 elsewhere (log a is
// undefined there; TensorFlow does the same).
Tensor power(const Tensor& a, const Tensor& b) {
  if (sharded::any(a, b)) return sharded::elementwise(power, a, b);
  Tensor out = binary_forward("power", BinaryOp::kPower, a, b);
  autograd::record("power", {a, b}, {out}, [&] {
    return [a, b, out](std::span<const Tensor> g) {
      const Tensor one = scalar(1, a.dtype()), zero = scalar(0, a.dtype());
      Tensor ga = multiply(g[0], multiply(b, power(a, subtract(b, one))));
      Tensor gb = where(greater(a, zero), multiply(multiply(g[0], out), log(a)), zero);
      return std::vector<Tensor>{sum_to(ga, a.shape()), sum_to(gb, b.shape())};
    };
  });
  return out;
}

Tensor equal(const Tensor& a, const Tensor& b) {
  if (sharded::any(a, b)) return sharded::elementwise(equal, a, b);
  return binary_forward("equal", BinaryOp::kEqual, a, b);
}
Tensor not_equal(const Tensor& a, const Tensor& b) {
  if (sharded::any(a, b)) return sharded::elementwise(not_equal, a, b);
  return binary_forward("not_equal", BinaryOp::kNotEqual, a, b);
}
Tensor less(const Tensor& a, const Tensor& b) {
  if (sharded::any(a, b)) return sharded::elementwise(less, a, b);
  return binary_forward("less", BinaryOp::kLess, a, b);
}
Tensor less_equal(const Tensor& a, const Tensor& b) {
  if (sharded::any(a, b)) return sharded::elementwise(less_equal, a, b);
  return binary_forward("less_equal", BinaryOp::kLessEqual, a, b);
}
Tensor greater(const Tensor& a, const Tensor& b) {
  if (sharded::any(a, b)) return sharded::elementwise(greater, a, b);
  return binary_forward("greater", BinaryOp::kGreater, a, b);
}
Tensor greater_equal(const Tensor& a, const Tensor& b) {
  if (sharded::any(a, b)) return sharded::elementwise(greater_equal, a, b);
  return binary_forward("greater_equal", BinaryOp::kGreaterEqual, a, b);
}

}  // namespace chorus::ops
