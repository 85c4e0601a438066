#include "chorus/ops/axes.h"

#include <algorithm>

#include "chorus/core/error.h"

namespace chorus::ops {

std::vector<int> Axes::resolve(const Shape& shape, const char* op) const {
  std::vector<int> out;
  if (all()) {
    for (int i = 0; i < shape.rank(); ++i) out.push_back(i);
    return out;
  }
  for (int axis : *axes_) out.push_back(shape.normalize_axis(axis, op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    throw_error<ValueError>("{}: repeated axis in the axes for shape {}", op, shape.to_string());
  }
  return out;
}

}  // namespace chorus::ops
