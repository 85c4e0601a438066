// PLACEHOLDER (to be replaced): reshape only, so autograd can be built and tested.
#include "chorus/ops/shape_ops.h"

#include "chorus/autograd/tape.h"

namespace chorus::ops {

Tensor reshape(const Tensor& x, const std::vector<int64_t>& new_shape) {
  Tensor out = x.view(Shape(new_shape));
  autograd::record("reshape", {x}, {out}, [&] {
    return [shape = x.shape()](std::span<const Tensor> g) { return std::vector<Tensor>{g[0].view(shape)}; };
  });
  return out;
}

}  // namespace chorus::ops
