// Axes: which axes a reduction covers — all of them (Keras's axis=None), one, or a list.
// Negative axes count from the end. A plain value.
#pragma once

#include <initializer_list>
#include <optional>
#include <vector>

#include "chorus/core/shape.h"

namespace chorus::ops {

class Axes {
 public:
  Axes() = default;                                                // every axis
  Axes(int axis) : axes_(std::vector<int>{axis}) {}                // NOLINT: ops::sum(x, 1)
  Axes(std::initializer_list<int> axes) : axes_(std::vector<int>(axes)) {}  // ops::sum(x, {0, 2})
  Axes(std::vector<int> axes) : axes_(std::move(axes)) {}         // NOLINT

  bool all() const { return !axes_.has_value(); }
  // Sorted, non-negative, de-duplicated axes for `shape`: every axis when all(). Throws
  // IndexError naming `op` for an axis out of range, ValueError for a repeated axis.
  std::vector<int> resolve(const Shape& shape, const char* op) const;

 private:
  std::optional<std::vector<int>> axes_;
};

}  // namespace chorus::ops
