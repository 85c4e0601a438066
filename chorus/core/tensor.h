// Tensor: an n-dimensional array on a device. A Tensor is a handle: copying it is
// shallow and shares the TensorImpl (shape, dtype, storage, autograd slot); ops never
// modify their inputs. Reading one tensor from many threads is safe; writing its data
// while another thread reads it is not.
#pragma once

#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chorus/core/device.h"
#include "chorus/core/dtype.h"
#include "chorus/core/error.h"
#include "chorus/core/shape.h"
#include "chorus/core/storage.h"
#include "chorus/core/trace_observer.h"

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

// Which block of a larger tensor a model-parallel tensor holds: core/sharding.h.
struct Sharding;

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
  // Set only on the blocks of sharded tensors (model parallelism): `shape` is then the
  // block's shape, and the tensor's shape() is the global one (core/sharding.h).
  std::shared_ptr<const Sharding> sharding;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // A new tensor with uninitialised contents (a string tensor holds empty strings).
  static Tensor empty(const Shape& shape, DType dtype = kFloat32, Device device = Device::cpu());
  // A kString tensor of `shape` holding `values` (UTF-8, not checked) in row-major order.
  // Throws ShapeError if the counts differ.
  static Tensor from_strings(const Shape& shape, std::vector<std::string> values);
  // A rank-1 kString tensor: Tensor::from_strings({"a", "bc"}) has shape (2,).
  static Tensor from_strings(std::vector<std::string> values);
  // A rank-0 kString tensor (tf.constant("hello")).
  static Tensor from_string(std::string value);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const {
    const TensorImpl& impl = checked();
    if (impl.sharding != nullptr) [[unlikely]] return sharded_shape();
    return impl.shape;
  }
  int rank() const { return shape().rank(); }
  // Dimension `axis` (negative counts from the end).
  int64_t dim(int axis) const { return shape().dim(axis); }
  int64_t numel() const { return shape().numel(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype()); }
  DType dtype() const { return checked().dtype; }
  Device device() const { return checked().storage->device(); }

  // Typed pointer to the first element (T = std::string for a string tensor). Throws
  // DTypeError if T is not this dtype.
  template <class T> T* data() const {
    check_dtype(dtype_of<T>, "Tensor::data");
    return static_cast<T*>(element_data());
  }
  // The first element's bytes, for numeric and bool tensors. Throws DTypeError for a
  // string tensor, whose elements are objects: the backstop that keeps byte copies and
  // kernels off strings.
  void* raw_data() const {
    if (checked().dtype == DType::kString) throw_string_raw_data();
    return element_data();
  }
  // The first element for any dtype (std::string objects for kString): for dtype-generic
  // copies through copy_elements, never memcpy.
  void* element_data() const {
    if (checked().sharding != nullptr) [[unlikely]] check_block_access();
    return static_cast<char*>(impl_->storage->data()) + impl_->offset;
  }

  // The elements of a string tensor in row-major order; valid while this tensor's storage
  // lives. Throws DTypeError for other dtypes.
  std::span<const std::string> strings() const {
    check_dtype(kString, "Tensor::strings");
    return {static_cast<const std::string*>(element_data()), static_cast<size_t>(numel())};
  }
  // Element `index` (row-major, flat) of a string tensor. Throws DTypeError or IndexError.
  const std::string& string_at(int64_t index) const;

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
  // A sharded tensor's shape as the calling thread sees it (sharding.cc).
  const Shape& sharded_shape() const;
  // Throws unless the calling thread sees sharded tensors as their blocks (sharding.cc).
  void check_block_access() const;
  [[noreturn]] void throw_string_raw_data() const;

  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& tensor);

// `value` as Python's bytes literal, as tensors print strings: b'it\'s caf\xc3\xa9'.
std::string bytes_literal(std::string_view value);

// Copies `count` elements of `dtype` from `src` to `dst` (pointers from element_data):
// string elements are assigned, others memmoved. The ranges may be the same but must not
// otherwise overlap for strings.
void copy_elements(void* dst, const void* src, size_t count, DType dtype);

// Whether `a` and `b` have the same shape, dtype and elements (np.array_equal; floats
// compare with ==, so NaN differs from itself). Undefined tensors equal only each other.
bool array_equal(const Tensor& a, const Tensor& b);

template <class T> T Tensor::item() const {
  note_host_read(*this, "item");
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
  note_host_read(*this, "to_vector");
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
