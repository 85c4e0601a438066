// Index kernels for chorus/ops/gather.cc: gather of rows (take, embedding lookup), its
// scatter-add gradient, one_hot, and top_k's gradient (top_k: top_k_kernels.h). Index
// arrays are int32 or int64. Kernels assume valid indices (the ops check them first with find_out_of_range). Threaded
// with parallel_for; scatters never race and add duplicates in a fixed order, so
// results do not depend on the thread count. Thread-safe: no shared state.
#pragma once

#include <cstddef>
#include <cstdint>

namespace chorus::backend::cpu {

// The first position m whose idx[m] is outside [0, size), or -1 if all are inside.
template <class I>
int64_t find_out_of_range(const I* idx, int64_t count, int64_t size);

// out[p, m, :] = x[p, idx[m], :] for p < outer, m < count, where a row (:) is row_bytes
// bytes. x is (outer, axis_size, row), out is (outer, count, row).
template <class I>
void gather_rows(const void* x, int64_t outer, int64_t axis_size, int64_t row_bytes, const I* idx, int64_t count,
                 void* out);

// dx[p, idx[m], :] += g[p, m, :]: the gradient of gather_rows, for float32 rows of
// row_len elements. Each destination row receives its updates in ascending m, whatever
// the thread count. REQUIRES: dx is (outer, axis_size, row_len) and initialised.
template <class I>
void scatter_add_rows(const float* g, int64_t outer, int64_t count, int64_t row_len, const I* idx, int64_t axis_size,
                      float* dx);

// out[i, :] = zeros of `classes` elements of elem_size bytes, with the element at
// idx[i] set to the bytes at `one` when 0 <= idx[i] < classes (other rows stay zero).
template <class I>
void one_hot(const I* idx, int64_t count, int64_t classes, size_t elem_size, const void* one, void* out);

// dx[r, idx[r, j]] += g[r, j] for r < rows, j < k; dx is (rows, n) and initialised.
void scatter_rows(const float* g, const int64_t* idx, int64_t rows, int64_t k, int64_t n, float* dx);

}  // namespace chorus::backend::cpu
