// PLACEHOLDER (to be replaced by the vectorised implementation): naive broadcasting
// loops for add/subtract/multiply/divide/negative so autograd can be built and tested.
#include "chorus/ops/elementwise.h"

#include "chorus/autograd/tape.h"
#include "chorus/ops/reduction.h"

namespace chorus::ops {
namespace {

template <class F>
Tensor binary_float(const char* op, const Tensor& a, const Tensor& b, F f) {
  if (a.dtype() != b.dtype()) {
    throw_error<DTypeError>("{}: dtypes differ: {} and {}", op, dtype_name(a.dtype()), dtype_name(b.dtype()));
  }
  const Shape out_shape = broadcast_shapes(a.shape(), b.shape(), op);
  Tensor out = Tensor::empty(out_shape, a.dtype());
  const auto sa = broadcast_strides(a.shape(), out_shape), sb = broadcast_strides(b.shape(), out_shape);
  const int rank = out_shape.rank();
  std::array<int64_t, kMaxRank> index{};
  const float *pa = a.data<float>(), *pb = b.data<float>();
  float* po = out.data<float>();
  const int64_t n = out_shape.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t ia = 0, ib = 0;
    for (int d = 0; d < rank; ++d) {
      ia += index[d] * sa[d];
      ib += index[d] * sb[d];
    }
    po[i] = f(pa[ia], pb[ib]);
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = binary_float("add", a, b, [](float x, float y) { return x + y; });
  autograd::record("add", {a, b}, {out}, [&] {
    return [sa = a.shape(), sb = b.shape()](std::span<const Tensor> g) {
      return std::vector<Tensor>{sum_to(g[0], sa), sum_to(g[0], sb)};
    };
  });
  return out;
}

Tensor subtract(const Tensor& a, const Tensor& b) {
  Tensor out = binary_float("subtract", a, b, [](float x, float y) { return x - y; });
  autograd::record("subtract", {a, b}, {out}, [&] {
    return [sa = a.shape(), sb = b.shape()](std::span<const Tensor> g) {
      return std::vector<Tensor>{sum_to(g[0], sa), sum_to(negative(g[0]), sb)};
    };
  });
  return out;
}

Tensor multiply(const Tensor& a, const Tensor& b) {
  Tensor out = binary_float("multiply", a, b, [](float x, float y) { return x * y; });
  autograd::record("multiply", {a, b}, {out}, [&] {
    return [a, b](std::span<const Tensor> g) {
      return std::vector<Tensor>{sum_to(multiply(g[0], b), a.shape()), sum_to(multiply(g[0], a), b.shape())};
    };
  });
  return out;
}

Tensor divide(const Tensor& a, const Tensor& b) {
  Tensor out = binary_float("divide", a, b, [](float x, float y) { return x / y; });
  autograd::record("divide", {a, b}, {out}, [&] {
    return [a, b, out](std::span<const Tensor> g) {
      Tensor ga = divide(g[0], b);
      return std::vector<Tensor>{sum_to(ga, a.shape()), sum_to(negative(multiply(ga, out)), b.shape())};
    };
  });
  return out;
}

Tensor negative(const Tensor& x) {
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  const float* px = x.data<float>();
  float* po = out.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) po[i] = -px[i];
  autograd::record("negative", {x}, {out}, [&] {
    return [](std::span<const Tensor> g) { return std::vector<Tensor>{negative(g[0])}; };
  });
  return out;
}

}  // namespace chorus::ops
