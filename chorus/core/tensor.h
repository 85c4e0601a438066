// Tensor: an n-dimensional array on a device. A Tensor is a handle: copying it is
// shallow and shares the TensorImpl (shape, dtype, storage, autograd slot); ops never
// modify their inputs. Reading one tensor from many threads is safe; writing its data
// while another thread reads it is not.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "chorus/core/device.h"
#include "chorus/core/dtype.h"
#include "chorus/core/error.h"
#include "chorus/core/shape.h"
#include "chorus/core/storage.h"

namespace chorus {

// What the autograd tape knows about a tensor. Core stores it; autograd/ interprets it.
struct AutogradInfo {
  uint64_t tape_id = 0;    // the tape whose record produced this tensor (0: none)
  int32_t slot = -1;       // its gradient slot on that tape
  bool trainable = false;  // a trainable Variable's value: every tape watches it
};

// Where a symbolic tensor of the functional API came from (Keras's `_keras_history`):
// defined by chorus/layers/node.h; core only carries it.
struct SymbolicOrigin;

// The shared state behind a Tensor handle. Storage is contiguous row-major from
// `offset` (bytes); views share `storage`.
struct TensorImpl {
  std::shared_ptr<Storage> storage;
  size_t offset = 0;
  Shape shape;
  DType dtype = DType::kFloat32;
  AutogradInfo autograd;
  // Set only on the placeholder tensors of a functional model under construction.
  std::shared_ptr<const SymbolicOrigin> keras_history;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // A new tensor with uninitialised contents.
  static Tensor empty(const Shape& shape, DType dtype = kFloat32, Device device = Device::cpu());

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return checked().shape; }
  int rank() const { return shape().rank(); }
  // Dimension `axis` (negative counts from the end).
  int64_t dim(int axis) const { return shape().dim(axis); }
  int64_t numel() const { return shape().numel(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype()); }
  DType dtype() const { return checked().dtype; }
  Device device() const { return checked().storage->device(); }

  // Typed pointer to the first element. Throws DTypeError if T is not this dtype.
  template <class T> T* data() const {
    check_dtype(dtype_of<T>, "Tensor::data");
    return static_cast<T*>(raw_data());
  }
  void* raw_data() const { return static_cast<char*>(checked().storage->data()) + impl_->offset; }

  // The single element of a one-element tensor, converted to T.
  template <class T> T item() const;
  // All elements, converted to T, in row-major order.
  template <class T> std::vector<T> to_vector() const;

  // A view of the same storage with another shape of equal numel (no autograd record:
  // ops::reshape is the differentiable form). Throws ShapeError.
  Tensor view(const Shape& shape) const;
  // A view of rows [begin, end) along the first axis, sharing storage: a replica's slice
  // of a batch. Throws IndexError on bad bounds. No autograd record (ops::slice is).
  Tensor first_axis_slice(int64_t begin, int64_t end) const;
  // A deep copy with fresh storage and no autograd history.
  Tensor clone() const;
  // Copies `source`'s elements into this tensor's storage. Shapes and dtypes must match.
  void copy_from(const Tensor& source) const;

  bool shares_storage(const Tensor& other) const {
    return defined() && other.defined() && impl_->storage == other.impl_->storage;
  }
  bool same(const Tensor& other) const { return impl_ == other.impl_; }
  TensorImpl* impl() const { return impl_.get(); }

  // NumPy-style text with shape and dtype, summarised for large tensors (tensor_format.cc).
  std::string to_string() const;

 private:
  const TensorImpl& checked() const {
    if (!impl_) throw Error("Tensor: use of an undefined tensor");
    return *impl_;
  }
  void check_dtype(DType expected, const char* what) const;

  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& tensor);

template <class T> T Tensor::item() const {
  if (numel() != 1) {
    throw_error<ShapeError>("Tensor::item: expected a tensor with one element, got shape {}", shape().to_string());
  }
  return visit_dtype(dtype(), [&](auto v) {
    using S = decltype(v);
    return static_cast<T>(static_cast<std::conditional_t<std::is_same_v<S, bfloat16>, float, S>>(
        *static_cast<const S*>(raw_data())));
  });
}

template <class T> std::vector<T> Tensor::to_vector() const {
  std::vector<T> out(static_cast<size_t>(numel()));
  visit_dtype(dtype(), [&](auto v) {
    using S = decltype(v);
    const S* src = static_cast<const S*>(raw_data());
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<S, bfloat16>) {
        out[i] = static_cast<T>(static_cast<float>(src[i]));
      } else {
        out[i] = static_cast<T>(src[i]);
      }
    }
  });
  return out;
}

}  // namespace chorus
