// Functions that make new tensors from values (Keras's ops.zeros, ops.ones, ops.full,
// ops.arange, ops.convert_to_tensor). Each returns a fresh tensor with no autograd history.
#pragma once

#include <initializer_list>
#include <span>
#include <vector>

#include "chorus/core/tensor.h"

namespace chorus {

Tensor zeros(const Shape& shape, DType dtype = kFloat32, Device device = Device::cpu());
Tensor ones(const Shape& shape, DType dtype = kFloat32, Device device = Device::cpu());
// Every element equal to `value` converted to `dtype`.
Tensor full(const Shape& shape, double value, DType dtype = kFloat32, Device device = Device::cpu());
// A rank-0 tensor.
Tensor scalar(double value, DType dtype = kFloat32, Device device = Device::cpu());
// [start, start + step, ...) below `stop` (above it for a negative step). Throws
// ValueError for step 0.
Tensor arange(double start, double stop, double step = 1, DType dtype = kFloat32);
inline Tensor arange(double stop, DType dtype = kFloat32) { return arange(0, stop, 1, dtype); }

// A tensor of `shape` holding `values` in row-major order, with the dtype of T
// (std::string makes a string tensor, as Tensor::from_strings).
// Throws ShapeError if the counts differ.
template <class T>
Tensor from_values(std::span<const T> values, const Shape& shape) {
  if (static_cast<int64_t>(values.size()) != shape.numel()) {
    throw_error<ShapeError>("from_values: {} values cannot fill shape {} ({} elements)", values.size(),
                            shape.to_string(), shape.numel());
  }
  Tensor out = Tensor::empty(shape, dtype_of<T>);
  copy_elements(out.element_data(), values.data(), values.size(), dtype_of<T>);
  note_constant(out);
  return out;
}
template <class T>
Tensor from_values(const std::vector<T>& values, const Shape& shape) {
  return from_values(std::span<const T>(values), shape);
}
// Rank-1 convenience: tensor({1.f, 2.f, 3.f}).
template <class T>
Tensor from_values(std::initializer_list<T> values) {
  return from_values(std::span<const T>(values.begin(), values.size()),
                     Shape{static_cast<int64_t>(values.size())});
}
template <class T>
Tensor from_values(std::initializer_list<T> values, const Shape& shape) {
  return from_values(std::span<const T>(values.begin(), values.size()), shape);
}

}  // namespace chorus
