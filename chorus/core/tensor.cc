#include "chorus/core/tensor.h"

#include <algorithm>

namespace chorus {

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  const auto count = static_cast<size_t>(shape.numel());
  impl->storage = dtype == kString ? Storage::allocate_strings(count, device)
                                   : Storage::allocate(count * dtype_size(dtype), device);
  impl->shape = shape;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::from_strings(const Shape& shape, std::vector<std::string> values) {
  if (static_cast<int64_t>(values.size()) != shape.numel()) {
    throw_error<ShapeError>("Tensor::from_strings: {} strings cannot fill shape {} ({} elements)", values.size(),
                            shape.to_string(), shape.numel());
  }
  Tensor out = empty(shape, kString);
  std::move(values.begin(), values.end(), out.data<std::string>());
  return out;
}

Tensor Tensor::from_strings(std::vector<std::string> values) {
  const Shape shape{static_cast<int64_t>(values.size())};
  return from_strings(shape, std::move(values));
}

Tensor Tensor::from_string(std::string value) {
  Tensor out = empty(Shape{}, kString);
  *out.data<std::string>() = std::move(value);
  return out;
}

const std::string& Tensor::string_at(int64_t index) const {
  const std::span<const std::string> all = strings();
  if (index < 0 || index >= static_cast<int64_t>(all.size())) {
    throw_error<IndexError>("Tensor::string_at: index {} is out of range for a string tensor of shape {}", index,
                            shape().to_string());
  }
  return all[static_cast<size_t>(index)];
}

void Tensor::throw_string_raw_data() const {
  throw_error<DTypeError>(
      "Tensor::raw_data: a string tensor (shape {}) has no raw bytes; expected a numeric or bool tensor "
      "(numeric ops and byte copies do not take strings)",
      shape().to_string());
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
  copy_elements(out.element_data(), element_data(), static_cast<size_t>(numel()), dtype());
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
  copy_elements(element_data(), source.element_data(), static_cast<size_t>(numel()), dtype());
}

void copy_elements(void* dst, const void* src, size_t count, DType dtype) {
  if (count == 0 || dst == src) return;
  if (dtype == kString) {
    std::copy_n(static_cast<const std::string*>(src), count, static_cast<std::string*>(dst));
  } else {
    std::memmove(dst, src, count * dtype_size(dtype));
  }
}

bool array_equal(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == kString) {
    const auto x = a.strings();
    const auto y = b.strings();
    return std::equal(x.begin(), x.end(), y.begin());
  }
  return visit_dtype(a.dtype(), [&](auto v) {
    using T = decltype(v);
    const T* x = static_cast<const T*>(a.raw_data());
    const T* y = static_cast<const T*>(b.raw_data());
    for (int64_t i = 0; i < a.numel(); ++i) {
      if constexpr (std::is_same_v<T, bfloat16>) {
        if (static_cast<float>(x[i]) != static_cast<float>(y[i])) return false;
      } else {
        if (x[i] != y[i]) return false;
      }
    }
    return true;
  });
}

}  // namespace chorus
