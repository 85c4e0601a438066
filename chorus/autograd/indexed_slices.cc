#include "chorus/autograd/indexed_slices.h"

#include <cassert>
#include <cstring>
#include <vector>

#include "chorus/backend/cpu/gather_kernels.h"
#include "chorus/core/creation.h"

namespace chorus::autograd {
namespace {

template <class Fn>
decltype(auto) with_indices(const Tensor& indices, Fn&& fn) {
  if (indices.dtype() == kInt32) return fn(indices.data<int32_t>());
  return fn(indices.data<int64_t>());
}

}  // namespace

int64_t IndexedSlices::row_width(const Shape& dense_shape) {
  return dense_shape.rank() == 0 || dense_shape[0] == 0 ? 0 : dense_shape.numel() / dense_shape[0];
}

Shape IndexedSlices::rows_shape(const Shape& dense_shape, int64_t n) {
  Shape shape{n};
  for (int d = 1; d < dense_shape.rank(); ++d) shape.push_back(dense_shape[d]);
  return shape;
}

Tensor IndexedSlices::to_dense() const {
  Tensor dense = zeros(dense_shape, kFloat32);
  add_to(dense);
  return dense;
}

void IndexedSlices::add_to(Tensor& dense) const {
  assert(dense.shape() == dense_shape && dense.dtype() == kFloat32);
  const int64_t n = indices.numel();
  if (n == 0) return;
  with_indices(indices, [&](const auto* idx) {
    backend::cpu::scatter_add_rows(values.data<float>(), 1, n, row_width(dense_shape), idx, dense_shape[0],
                                   dense.data<float>());
  });
}

IndexedSlices IndexedSlices::concatenate(std::span<const IndexedSlices> parts) {
  assert(!parts.empty());
  if (parts.size() == 1) return parts[0];
  const Shape& dense_shape = parts[0].dense_shape;
  const int64_t width = row_width(dense_shape);
  int64_t n = 0;
  bool same_dtype = true;
  for (const IndexedSlices& part : parts) {
    n += part.indices.numel();
    same_dtype = same_dtype && part.indices.dtype() == parts[0].indices.dtype();
  }
  const DType index_dtype = same_dtype ? parts[0].indices.dtype() : kInt64;
  IndexedSlices out{.values = Tensor::empty(rows_shape(dense_shape, n), kFloat32),
                    .indices = Tensor::empty(Shape{n}, index_dtype),
                    .dense_shape = dense_shape};
  int64_t at = 0;
  for (const IndexedSlices& part : parts) {
    const int64_t m = part.indices.numel();
    std::memcpy(out.values.data<float>() + at * width, part.values.data<float>(),
                static_cast<size_t>(m * width) * sizeof(float));
    with_indices(part.indices, [&](const auto* idx) {
      with_indices(out.indices, [&](auto* dst) {
        for (int64_t i = 0; i < m; ++i) dst[at + i] = idx[i];
      });
    });
    at += m;
  }
  return out;
}

}  // namespace chorus::autograd
