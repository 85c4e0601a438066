#include "chorus/core/tensor.h"

namespace chorus {

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::allocate(static_cast<size_t>(shape.numel()) * dtype_size(dtype), device);
  impl->shape = shape;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

void Tensor::check_dtype(DType expected, const char* what) const {
  if (dtype() != expected) {
    throw_error<DTypeError>("{}: requested {} elements from a tensor of dtype {} and shape {}", what,
                            dtype_name(expected), dtype_name(dtype()), shape().to_string());
  }
}

Tensor Tensor::view(const Shape& shape) const {
  if (shape.numel() != numel()) {
    throw_error<ShapeError>("Tensor::view: cannot view a tensor of shape {} ({} elements) as shape {} ({} elements)",
                            this->shape().to_string(), numel(), shape.to_string(), shape.numel());
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->offset = impl_->offset;
  impl->shape = shape;
  impl->dtype = impl_->dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::first_axis_slice(int64_t begin, int64_t end) const {
  if (rank() == 0) throw_error<ShapeError>("Tensor::first_axis_slice: cannot slice a scalar");
  const int64_t rows = shape()[0];
  if (begin < 0 || end < begin || end > rows) {
    throw_error<IndexError>("Tensor::first_axis_slice: rows [{}, {}) are out of range for shape {}", begin, end,
                            shape().to_string());
  }
  Shape sliced = shape();
  sliced[0] = end - begin;
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->offset = impl_->offset + static_cast<size_t>(begin * (rows == 0 ? 0 : numel() / rows)) * dtype_size(dtype());
  impl->shape = sliced;
  impl->dtype = impl_->dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype(), device());
  std::memcpy(out.raw_data(), raw_data(), nbytes());
  return out;
}

void Tensor::copy_from(const Tensor& source) const {
  if (source.shape() != shape() || source.dtype() != dtype()) {
    const std::string message =
        fmt::format("Tensor::copy_from: expected a source of shape {} and dtype {}, got shape {} and dtype {}",
                    shape().to_string(), dtype_name(dtype()), source.shape().to_string(), dtype_name(source.dtype()));
    if (source.dtype() != dtype()) throw DTypeError(message);
    throw ShapeError(message);
  }
  std::memmove(raw_data(), source.raw_data(), nbytes());
}

}  // namespace chorus
