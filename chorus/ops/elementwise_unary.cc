// Unary elementwise ops and their gradients. Backward passes use fused kernels
// (BinaryOp::k*Grad) that take the saved forward input x or output y and the upstream
// gradient g, so e.g. GELU's derivative is one pass instead of a dozen ops.
#include "chorus/autograd/tape.h"
#include "chorus/ops/elementwise.h"
#include "chorus/ops/elementwise_detail.h"
#include "chorus/ops/sharded_ops.h"

namespace chorus::ops {
namespace {

using detail::backward_kernel;
using detail::BinaryOp;
using detail::UnaryOp;
using detail::unary_forward;

// op(x) whose gradient is grad_code(x, g).
Tensor unary_with_input_grad(const char* op, UnaryOp code, BinaryOp grad_code, const Tensor& x) {
  if (sharded::any(x)) {
    return sharded::elementwise([=](const Tensor& t) { return unary_with_input_grad(op, code, grad_code, t); }, x);
  }
  Tensor out = unary_forward(op, code, x);
  autograd::record(op, {x}, {out}, [&] {
    return [x, grad_code](std::span<const Tensor> g) { return std::vector<Tensor>{backward_kernel(grad_code, x, g[0])}; };
  });
  return out;
}

// op(x) whose gradient is grad_code(y, g), y = op(x) (cheaper for sigmoid, tanh, sqrt).
Tensor unary_with_output_grad(const char* op, UnaryOp code, BinaryOp grad_code, const Tensor& x) {
  if (sharded::any(x)) {
    return sharded::elementwise([=](const Tensor& t) { return unary_with_output_grad(op, code, grad_code, t); }, x);
  }
  Tensor out = unary_forward(op, code, x);
  autograd::record(op, {x}, {out}, [&] {
    return [out, grad_code](std::span<const Tensor> g) {
      return std::vector<Tensor>{backward_kernel(grad_code, out, g[0])};
    };
  });
  return out;
}

}  // namespace

Tensor negative(const Tensor& x) {
  if (sharded::any(x)) return sharded::elementwise(negative, x);
  Tensor out = unary_forward("negative", UnaryOp::kNegative, x);
  autograd::record("negative", {x}, {out}, [&] {
    return [](std::span<const Tensor> g) { return std::vector<Tensor>{negative(g[0])}; };
  });
  return out;
}

// abs'(0) = 0.
Tensor abs(const Tensor& x) { return unary_with_input_grad("abs", UnaryOp::kAbs, BinaryOp::kAbsGrad, x); }

Tensor square(const Tensor& x) { return unary_with_input_grad("square", UnaryOp::kSquare, BinaryOp::kSquareGrad, x); }

Tensor exp(const Tensor& x) {
  if (sharded::any(x)) return sharded::elementwise(exp, x);
  Tensor out = unary_forward("exp", UnaryOp::kExp, x);
  autograd::record("exp", {x}, {out}, [&] {
    return [out](std::span<const Tensor> g) { return std::vector<Tensor>{multiply(g[0], out)}; };
  });
  return out;
}

Tensor log(const Tensor& x) {
  if (sharded::any(x)) return sharded::elementwise(log, x);
  Tensor out = unary_forward("log", UnaryOp::kLog, x);
  autograd::record("log", {x}, {out}, [&] {
    return [x](std::span<const Tensor> g) { return std::vector<Tensor>{divide(g[0], x)}; };
  });
  return out;
}

Tensor sqrt(const Tensor& x) { return unary_with_output_grad("sqrt", UnaryOp::kSqrt, BinaryOp::kSqrtGrad, x); }

Tensor rsqrt(const Tensor& x) { return unary_with_output_grad("rsqrt", UnaryOp::kRsqrt, BinaryOp::kRsqrtGrad, x); }

// relu'(0) = 0.
Tensor relu(const Tensor& x) { return unary_with_input_grad("relu", UnaryOp::kRelu, BinaryOp::kReluGrad, x); }

Tensor gelu(const Tensor& x, bool approximate) {
  return approximate ? unary_with_input_grad("gelu", UnaryOp::kGeluTanh, BinaryOp::kGeluTanhGrad, x)
                     : unary_with_input_grad("gelu", UnaryOp::kGeluErf, BinaryOp::kGeluErfGrad, x);
}

Tensor sigmoid(const Tensor& x) {
  return unary_with_output_grad("sigmoid", UnaryOp::kSigmoid, BinaryOp::kSigmoidGrad, x);
}

Tensor tanh(const Tensor& x) { return unary_with_output_grad("tanh", UnaryOp::kTanh, BinaryOp::kTanhGrad, x); }

Tensor softplus(const Tensor& x) {
  return unary_with_input_grad("softplus", UnaryOp::kSoftplus, BinaryOp::kSoftplusGrad, x);
}

}  // namespace chorus::ops
