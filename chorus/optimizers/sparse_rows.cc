#include "chorus/optimizers/sparse_rows.h"

#include <limits>

#include "chorus/core/error.h"

namespace chorus::optimizers {
namespace {

// A row -> group map kept at -1 between uses, so grouping n rows of a large table costs
// O(n), not a table-sized fill: only the entries set are reset.
std::vector<int32_t>& unset_groups(int64_t rows) {
  thread_local std::vector<int32_t> groups;
  if (static_cast<int64_t>(groups.size()) < rows) groups.resize(static_cast<size_t>(rows), -1);
  return groups;
}

}  // namespace

SparseRows::SparseRows(autograd::IndexedSlices slices) : slices_(std::move(slices)) {
  const Shape& dense = slices_.dense_shape;
  width_ = slices_.row_width();
  const int64_t n = slices_.indices.numel();
  if (n >= std::numeric_limits<int32_t>::max()) {
    throw_error<ValueError>("sparse gradient: {} rows in one step; at most {} are supported", n,
                            std::numeric_limits<int32_t>::max() - 1);
  }
  rows_.resize(static_cast<size_t>(n));  // trimmed to the distinct rows below
  place_.resize(static_cast<size_t>(n));
  std::vector<int32_t>& group_of = unset_groups(dense[0]);
  int32_t groups = 0;
  auto group = [&](const auto* idx) {
    // Branch-free: whether a row is new is data, and mispredicting it costs more than the
    // loop's work.
    for (int64_t p = 0; p < n; ++p) {
      const int64_t row = idx[p];
      const int32_t seen = group_of[static_cast<size_t>(row)];
      const bool is_new = seen < 0;
      const int32_t g = is_new ? groups : seen;
      group_of[static_cast<size_t>(row)] = g;
      rows_[static_cast<size_t>(groups)] = row;
      place_[static_cast<size_t>(p)] = is_new ? ~g : g;
      groups += is_new ? 1 : 0;
    }
  };
  if (slices_.indices.dtype() == kInt32) {
    group(slices_.indices.data<int32_t>());
  } else {
    group(slices_.indices.data<int64_t>());
  }
  rows_.resize(static_cast<size_t>(groups));
  for (const int64_t row : rows_) group_of[static_cast<size_t>(row)] = -1;
}

kernels::RowGroups SparseRows::groups() const {
  return {.rows = rows_.data(),
          .count = size(),
          .place = place_.data(),
          .values = slices_.values.data<float>(),
          .positions = positions(),
          .width = width_};
}

}  // namespace chorus::optimizers
