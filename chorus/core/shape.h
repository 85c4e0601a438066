// Shape: the dimensions of a tensor, up to kMaxRank of them, stored inline so that
// creating and copying shapes never allocates. A plain value; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace chorus {

inline constexpr int kMaxRank = 8;

class Shape {
 public:
  Shape() = default;  // rank 0: a scalar
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::span<const int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims) : Shape(std::span<const int64_t>(dims)) {}

  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  // Dimension `axis`, where a negative axis counts from the end. Throws IndexError.
  int64_t dim(int axis) const { return dims_[normalize_axis(axis, "Shape::dim")]; }
  // Product of the dimensions (1 for a scalar).
  int64_t numel() const;

  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + rank_; }
  std::span<const int64_t> dims() const { return {dims_.data(), static_cast<size_t>(rank_)}; }
  std::vector<int64_t> to_vector() const { return {begin(), end()}; }

  // Appends one dimension. REQUIRES: rank() < kMaxRank (throws ShapeError otherwise).
  void push_back(int64_t dim);

  // Maps axis in [-rank, rank) to [0, rank); throws IndexError naming `op` otherwise.
  int normalize_axis(int axis, const char* op) const;

  // "(64, 785)", "()" for a scalar, "(3,)" for rank 1, as Python prints tuples.
  std::string to_string() const;

  friend bool operator==(const Shape& a, const Shape& b);

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// Row-major strides in elements.
std::array<int64_t, kMaxRank> contiguous_strides(const Shape& shape);

// The shape NumPy broadcasting gives `a` and `b`. Throws ShapeError naming `op`:
// "add: shapes (2, 3) and (4,) do not broadcast".
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Strides (elements) that read a contiguous tensor of shape `in` as if it had the
// broadcast shape `out`: right-aligned, 0 on broadcast axes. REQUIRES: `in` broadcasts to `out`.
std::array<int64_t, kMaxRank> broadcast_strides(const Shape& in, const Shape& out);

}  // namespace chorus
