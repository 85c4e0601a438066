#include "chorus/ops/reduce_plan.h"

#include <algorithm>

#include "chorus/backend/cpu/parallel.h"

namespace chorus::ops::internal {
namespace {

constexpr int64_t kConvertGrain = 65536;

}  // namespace

ReducePlan plan_reduction(const Shape& shape, std::vector<int> axes, bool keepdims) {
  ReducePlan plan;
  plan.axes = std::move(axes);
  plan.kept = shape;
  for (int a : plan.axes) {
    plan.kept[a] = 1;
    plan.count *= shape[a];
  }
  plan.out = plan.kept;
  if (!keepdims) {
    plan.out = Shape();
    for (int d = 0; d < shape.rank(); ++d) {
      if (!std::binary_search(plan.axes.begin(), plan.axes.end(), d)) plan.out.push_back(shape[d]);
    }
  }
  // Merge adjacent axes alike (reduced or kept), skipping axes of size 1.
  std::vector<int64_t> size;
  std::vector<bool> reduced;
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 1) continue;
    const bool r = std::binary_search(plan.axes.begin(), plan.axes.end(), d);
    if (!size.empty() && reduced.back() == r) {
      size.back() *= shape[d];
    } else {
      size.push_back(shape[d]);
      reduced.push_back(r);
    }
  }
  for (int g = static_cast<int>(size.size()) - 1; g >= 0; --g) {
    if (!reduced[g]) continue;
    ReduceStep step;
    for (int h = 0; h < g; ++h) step.outer *= size[h];
    for (size_t h = g + 1; h < size.size(); ++h) step.inner *= size[h];
    step.reduced = size[g];
    size[g] = 1;
    plan.steps.push_back(step);
  }
  return plan;
}

Tensor to_float32(const Tensor& x) {
  if (x.dtype() == kFloat32) return x;
  Tensor out = Tensor::empty(x.shape(), kFloat32);
  const bfloat16* src = x.data<bfloat16>();
  float* dst = out.data<float>();
  backend::cpu::parallel_for(x.numel(), kConvertGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = static_cast<float>(src[i]);
  });
  return out;
}

Tensor from_float32(const Tensor& x, DType dtype) {
  if (dtype == kFloat32) return x;
  Tensor out = Tensor::empty(x.shape(), dtype);
  const float* src = x.data<float>();
  bfloat16* dst = out.data<bfloat16>();
  backend::cpu::parallel_for(x.numel(), kConvertGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = bfloat16(src[i]);
  });
  return out;
}

void check_floating(const Tensor& x, const char* op) {
  check_not_string(op, x.dtype());  // mean, softmax and the like: one message for strings
  if (!is_floating(x.dtype())) {
    throw_error<DTypeError>("{}: expected a floating dtype (float32 or bfloat16), got {}", op, dtype_name(x.dtype()));
  }
}

}  // namespace chorus::ops::internal
