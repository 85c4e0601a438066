#include "chorus/replicas/sparse_exchange.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "chorus/core/creation.h"
#include "chorus/core/error.h"

namespace chorus::replicas {

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

IndexedSlices gather_across_workers(const IndexedSlices& local, const Shape& shape, comm::Communicator& workers) {
  const int size = workers.size();
  const int64_t width = IndexedSlices::row_width(shape);
  // Counts first, then rows padded to the most.
  int64_t n = local.defined() ? local.indices.numel() : 0;
  std::vector<int64_t> count(static_cast<size_t>(size));
  workers.all_gather(std::span(&n, 1), std::span(count));
  const int64_t most = *std::max_element(count.begin(), count.end());
  int64_t total = 0;
  for (const int64_t m : count) total += m;
  if (total == 0) return {};
  std::vector<int64_t> rows_in(static_cast<size_t>(most));
  for (int64_t i = 0; i < n; ++i) rows_in[static_cast<size_t>(i)] = index_at(local.indices, i);
  Tensor values_in = zeros(Shape{most * width}, kFloat32);
  if (n > 0) std::memcpy(values_in.data<float>(), local.values.data<float>(), static_cast<size_t>(n * width) * 4);
  std::vector<int64_t> rows_out(static_cast<size_t>(size * most));
  Tensor values_out = Tensor::empty(Shape{size * most * width}, kFloat32);
  workers.all_gather(std::span(rows_in), std::span(rows_out));
  workers.all_gather(values_in, values_out);
  IndexedSlices out{.values = Tensor::empty(IndexedSlices::rows_shape(shape, total), kFloat32),
                    .indices = Tensor::empty(Shape{total}, kInt64),
                    .dense_shape = shape};
  int64_t at = 0;
  for (int w = 0; w < size; ++w) {
    const int64_t m = count[static_cast<size_t>(w)];
    std::copy_n(rows_out.begin() + w * most, m, out.indices.data<int64_t>() + at);
    std::memcpy(out.values.data<float>() + at * width, values_out.data<float>() + w * most * width,
                static_cast<size_t>(m * width) * 4);
    at += m;
  }
  return out;
}

int64_t rows_per_worker(int64_t rows, int workers) { return (rows + workers - 1) / workers; }

namespace {

template <class T>
void append(std::vector<std::byte>& out, const T* data, size_t count) {
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  out.insert(out.end(), bytes, bytes + count * sizeof(T));
}

}  // namespace

Tensor lookup_rows(const Tensor& block, int64_t begin, std::span<const int64_t> ids, comm::Communicator& workers) {
  const int size = workers.size();
  const int64_t block_rows = block.dim(0);
  const int64_t width = IndexedSlices::row_width(block.shape());
  // Each row is asked of its keeper, in ids' order.
  std::vector<std::vector<std::byte>> asks(static_cast<size_t>(size));
  for (const int64_t id : ids) append(asks[static_cast<size_t>(id / block_rows)], &id, 1);
  const std::vector<std::vector<std::byte>> asked = workers.all_to_all(asks);
  std::vector<std::vector<std::byte>> answers(static_cast<size_t>(size));
  for (int from = 0; from < size; ++from) {
    const auto& wanted = asked[static_cast<size_t>(from)];
    auto& answer = answers[static_cast<size_t>(from)];
    answer.reserve(wanted.size() / sizeof(int64_t) * static_cast<size_t>(width) * sizeof(float));
    for (size_t k = 0; k < wanted.size(); k += sizeof(int64_t)) {
      int64_t id;
      std::memcpy(&id, wanted.data() + k, sizeof(id));
      if (id < begin || id >= begin + block_rows) {
        throw_error<IndexError>("lookup across workers: worker {} asked worker {} for row {}, which keeps rows [{}, {})",
                                from, workers.rank(), id, begin, begin + block_rows);
      }
      append(answer, block.data<float>() + (id - begin) * width, static_cast<size_t>(width));
    }
  }
  const std::vector<std::vector<std::byte>> answered = workers.all_to_all(answers);
  Tensor out = Tensor::empty(IndexedSlices::rows_shape(block.shape(), static_cast<int64_t>(ids.size())), kFloat32);
  std::vector<size_t> taken(static_cast<size_t>(size), 0);
  const size_t row_bytes = static_cast<size_t>(width) * sizeof(float);
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto keeper = static_cast<size_t>(ids[i] / block_rows);
    std::memcpy(out.data<float>() + static_cast<int64_t>(i) * width, answered[keeper].data() + taken[keeper], row_bytes);
    taken[keeper] += row_bytes;
  }
  return out;
}

IndexedSlices send_rows_to_keepers(const IndexedSlices& local, int64_t begin, const Shape& block_shape,
                                   comm::Communicator& workers) {
  const int size = workers.size();
  const int64_t block_rows = block_shape[0];
  const int64_t width = IndexedSlices::row_width(block_shape);
  // To each keeper: its rows' indices, then their values, in position order.
  const int64_t n = local.defined() ? local.indices.numel() : 0;
  std::vector<std::vector<int64_t>> positions(static_cast<size_t>(size));
  for (int64_t i = 0; i < n; ++i) positions[static_cast<size_t>(index_at(local.indices, i) / block_rows)].push_back(i);
  std::vector<std::vector<std::byte>> sends(static_cast<size_t>(size));
  for (int w = 0; w < size; ++w) {
    const auto& mine = positions[static_cast<size_t>(w)];
    auto& send = sends[static_cast<size_t>(w)];
    for (const int64_t i : mine) {
      const int64_t row = index_at(local.indices, i);
      append(send, &row, 1);
    }
    for (const int64_t i : mine) append(send, local.values.data<float>() + i * width, static_cast<size_t>(width));
  }
  const std::vector<std::vector<std::byte>> received = workers.all_to_all(sends);
  const size_t entry_bytes = sizeof(int64_t) + static_cast<size_t>(width) * sizeof(float);
  int64_t total = 0;
  for (const auto& part : received) total += static_cast<int64_t>(part.size() / entry_bytes);
  IndexedSlices out{.values = Tensor::empty(IndexedSlices::rows_shape(block_shape, total), kFloat32),
                    .indices = Tensor::empty(Shape{total}, kInt64),
                    .dense_shape = block_shape};
  int64_t at = 0;
  for (const auto& part : received) {  // in rank order: the global replica order of the rows
    const auto m = static_cast<int64_t>(part.size() / entry_bytes);
    if (m == 0) continue;  // (an empty part's data() may be null)
    for (int64_t i = 0; i < m; ++i) {
      int64_t row;
      std::memcpy(&row, part.data() + i * static_cast<int64_t>(sizeof(int64_t)), sizeof(row));
      out.indices.data<int64_t>()[at + i] = row - begin;
    }
    std::memcpy(out.values.data<float>() + at * width, part.data() + m * static_cast<int64_t>(sizeof(int64_t)),
                static_cast<size_t>(m * width) * sizeof(float));
    at += m;
  }
  return out;
}

}  // namespace chorus::replicas
