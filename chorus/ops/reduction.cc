// PLACEHOLDER (to be replaced): naive sum / sum_to / broadcast_to so autograd can be
// built and tested.
#include "chorus/ops/reduction.h"

#include "chorus/autograd/tape.h"
#include "chorus/core/creation.h"
#include "chorus/ops/elementwise.h"
#include "chorus/ops/shape_ops.h"

namespace chorus::ops {

Tensor sum(const Tensor& x, const Axes& axis, bool keepdims) {
  const std::vector<int> axes = axis.resolve(x.shape(), "sum");
  Shape kept = x.shape();
  for (int a : axes) kept[a] = 1;
  Tensor out = zeros(kept, x.dtype());
  const auto so = broadcast_strides(kept, x.shape());
  const int rank = x.rank();
  std::array<int64_t, kMaxRank> index{};
  const float* px = x.data<float>();
  float* po = out.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t io = 0;
    for (int d = 0; d < rank; ++d) io += index[d] * so[d];
    po[io] += px[i];
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < x.shape()[d]) break;
      index[d] = 0;
    }
  }
  if (!keepdims) {
    Shape squeezed;
    for (int d = 0; d < rank; ++d) {
      if (std::find(axes.begin(), axes.end(), d) == axes.end()) squeezed.push_back(x.shape()[d]);
    }
    out = out.view(squeezed);
  }
  autograd::record("sum", {x}, {out}, [&] {
    return [shape = x.shape(), kept](std::span<const Tensor> g) {
      return std::vector<Tensor>{broadcast_to(g[0].view(kept), shape)};
    };
  });
  return out;
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const int lead = x.rank() - shape.rank();
  std::vector<int> axes;
  for (int d = 0; d < x.rank(); ++d) {
    if (d < lead || (shape[d - lead] == 1 && x.shape()[d] != 1)) axes.push_back(d);
  }
  return reshape(sum(x, Axes(axes), false), shape.to_vector());
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  const Shape out_shape = broadcast_shapes(x.shape(), shape, "broadcast_to");
  if (out_shape != shape) {
    throw_error<ShapeError>("broadcast_to: cannot broadcast shape {} to {}", x.shape().to_string(), shape.to_string());
  }
  return add(x, zeros(shape, x.dtype()));
}

}  // namespace chorus::ops
