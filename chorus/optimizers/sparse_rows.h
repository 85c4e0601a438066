// SparseRows: a variable's sparse gradient (IndexedSlices) grouped by row:
// its distinct rows in order of first appearance, and the group of every gradient row.
// An optimizer then updates only those rows, summing duplicates as it reads them, with no
// table-sized copy. Built on one thread; afterwards read-only, so disjoint ranges of
// groups may be updated from many threads.
#pragma once

#include <cstdint>
#include <vector>

#include "chorus/autograd/indexed_slices.h"
#include "chorus/autograd/variable.h"
#include "chorus/optimizers/update_kernels.h"

namespace chorus::optimizers {

class SparseRows {
 public:
  // Whether updating only `gradient`'s rows beats the dense update of `variable` (the
  // bits are the same either way): when the variable has at least two rows per gradient
  // row; a denser gradient's sequential passes win (docs/benchmarks.md).
  static bool pays(const autograd::Variable& variable, const autograd::IndexedSlices& gradient) {
    return variable.shape()[0] >= 2 * gradient.indices.numel();
  }

  // REQUIRES: `slices` is well formed (indices in range, values of shape
  // (n,) + dense_shape[1:]), as Optimizer::apply_gradients checks.
  explicit SparseRows(autograd::IndexedSlices slices);

  // Distinct rows (groups), and gradient rows (positions).
  int64_t size() const { return static_cast<int64_t>(rows_.size()); }
  int64_t positions() const { return static_cast<int64_t>(place_.size()); }
  kernels::RowGroups groups() const;

 private:
  autograd::IndexedSlices slices_;
  int64_t width_;
  std::vector<int64_t> rows_;
  std::vector<int32_t> place_;
};

}  // namespace chorus::optimizers
