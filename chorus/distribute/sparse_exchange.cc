#include "chorus/distribute/sparse_exchange.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "chorus/core/creation.h"
#include "chorus/core/error.h"

namespace chorus::distribute {

using autograd::IndexedSlices;

namespace {

int64_t index_at(const Tensor& indices, int64_t i) {
  return indices.dtype() == kInt32 ? indices.data<int32_t>()[i] : indices.data<int64_t>()[i];
}

}  // namespace

IndexedSlices scaled_rows(const Tensor& dense, const IndexedSlices& sparse, const Shape& shape, float scale) {
  if (!sparse.defined() && !dense.defined()) return {};
  const int64_t width = IndexedSlices::row_width(shape);
  const int64_t n = sparse.defined() ? sparse.indices.numel() : shape[0];
  IndexedSlices out{.values = Tensor::empty(IndexedSlices::rows_shape(shape, n), kFloat32),
                    .indices = Tensor::empty(Shape{n}, kInt64),
                    .dense_shape = shape};
  const float* in = sparse.defined() ? sparse.values.data<float>() : dense.data<float>();
  float* values = out.values.data<float>();
  for (int64_t i = 0; i < n * width; ++i) values[i] = in[i] * scale;
  int64_t* indices = out.indices.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) indices[i] = sparse.defined() ? index_at(sparse.indices, i) : i;
  return out;
}

IndexedSlices gather_across_workers(const IndexedSlices& local, const Shape& shape, Communicator& workers) {
  if (shape[0] > std::numeric_limits<int32_t>::max()) {
    throw_error<ValueError>("data parallelism across workers: a table of {} rows has too many to exchange its "
                            "gradient as rows (at most 2^31 - 1)",
                            shape[0]);
  }
  const int size = workers.size();
  const int64_t width = IndexedSlices::row_width(shape);
  // Counts first (exact in float32 up to 2^24 rows a step), then rows padded to the most.
  const int64_t n = local.defined() ? local.indices.numel() : 0;
  Tensor counts = Tensor::empty(Shape{size}, kFloat32);
  workers.all_gather(full(Shape{1}, static_cast<double>(n), kFloat32), counts);
  std::vector<int64_t> count(static_cast<size_t>(size));
  int64_t most = 0, total = 0;
  for (int w = 0; w < size; ++w) {
    count[static_cast<size_t>(w)] = static_cast<int64_t>(counts.data<float>()[w]);
    most = std::max(most, count[static_cast<size_t>(w)]);
    total += count[static_cast<size_t>(w)];
  }
  if (total == 0) return {};
  // Row numbers travel as the bits of int32s in float32 slots: all_gather copies bits.
  Tensor rows_in = zeros(Shape{most}, kFloat32), values_in = zeros(Shape{most * width}, kFloat32);
  for (int64_t i = 0; i < n; ++i) {
    const auto row = static_cast<int32_t>(index_at(local.indices, i));
    std::memcpy(rows_in.data<float>() + i, &row, sizeof(row));
  }
  if (n > 0) std::memcpy(values_in.data<float>(), local.values.data<float>(), static_cast<size_t>(n * width) * 4);
  Tensor rows_out = Tensor::empty(Shape{size * most}, kFloat32);
  Tensor values_out = Tensor::empty(Shape{size * most * width}, kFloat32);
  workers.all_gather(rows_in, rows_out);
  workers.all_gather(values_in, values_out);
  IndexedSlices out{.values = Tensor::empty(IndexedSlices::rows_shape(shape, total), kFloat32),
                    .indices = Tensor::empty(Shape{total}, kInt64),
                    .dense_shape = shape};
  int64_t at = 0;
  for (int w = 0; w < size; ++w) {
    const int64_t m = count[static_cast<size_t>(w)];
    for (int64_t i = 0; i < m; ++i) {
      int32_t row;
      std::memcpy(&row, rows_out.data<float>() + w * most + i, sizeof(row));
      out.indices.data<int64_t>()[at + i] = row;
    }
    std::memcpy(out.values.data<float>() + at * width, values_out.data<float>() + w * most * width,
                static_cast<size_t>(m * width) * 4);
    at += m;
  }
  return out;
}

}  // namespace chorus::distribute
