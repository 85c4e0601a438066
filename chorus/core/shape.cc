#include "chorus/core/shape.h"

#include <algorithm>

#include <fmt/format.h>

#include "chorus/core/error.h"

namespace chorus {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const int64_t> dims) {
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    throw_error<ShapeError>("Shape: rank {} exceeds the maximum rank {}", dims.size(), kMaxRank);
  }
  for (int64_t d : dims) push_back(d);
}

void Shape::push_back(int64_t dim) {
  if (rank_ == kMaxRank) {
    throw_error<ShapeError>("Shape: rank {} exceeds the maximum rank {}", rank_ + 1, kMaxRank);
  }
  if (dim < 0) throw_error<ShapeError>("Shape: dimension {} is negative in {}", dim, to_string());
  dims_[rank_++] = dim;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

int Shape::normalize_axis(int axis, const char* op) const {
  if (axis < -rank_ || axis >= rank_ || rank_ == 0) {
    throw_error<IndexError>("{}: axis {} is out of range for shape {} (rank {})", op, axis, to_string(), rank_);
  }
  return axis < 0 ? axis + rank_ : axis;
}

std::string Shape::to_string() const {
  if (rank_ == 1) return fmt::format("({},)", dims_[0]);
  return fmt::format("({})", fmt::join(begin(), end(), ", "));
}

bool operator==(const Shape& a, const Shape& b) {
  if (a.rank_ != b.rank_) return false;
  for (int i = 0; i < a.rank_; ++i) {
    if (a.dims_[i] != b.dims_[i]) return false;
  }
  return true;
}

std::array<int64_t, kMaxRank> contiguous_strides(const Shape& shape) {
  std::array<int64_t, kMaxRank> strides{};
  int64_t stride = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const int rank = std::max(a.rank(), b.rank());
  std::array<int64_t, kMaxRank> dims{};
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      throw_error<ShapeError>("{}: shapes {} and {} do not broadcast", op, a.to_string(), b.to_string());
    }
    dims[i] = da == 1 ? db : da;
  }
  return Shape(std::span<const int64_t>(dims.data(), static_cast<size_t>(rank)));
}

std::array<int64_t, kMaxRank> broadcast_strides(const Shape& in, const Shape& out) {
  std::array<int64_t, kMaxRank> strides{};
  const auto in_strides = contiguous_strides(in);
  const int shift = out.rank() - in.rank();
  for (int i = 0; i < in.rank(); ++i) strides[i + shift] = in[i] == 1 ? 0 : in_strides[i];
  return strides;
}

}  // namespace chorus
