// Variable: a named tensor whose value persists across steps (a weight), with a path
// such as "dense_1/kernel". A handle: copies share the value. A trainable variable is
// watched by every GradientTape. Reading from many threads is safe; assign() must not
// run while another thread computes with the value.
#pragma once

#include <memory>
#include <string>

#include "chorus/core/tensor.h"

namespace chorus::autograd {

class Variable {
 public:
  Variable() = default;
  // Takes `initial_value` (not copied: the variable owns it from now on).
  Variable(std::string path, Tensor initial_value, bool trainable = true);

  const std::string& path() const { return impl().path; }
  // The last component of the path: "kernel" for "dense_1/kernel".
  std::string name() const;
  bool trainable() const { return impl().value.impl()->autograd.trainable; }
  bool defined() const { return impl_ != nullptr; }

  // The value as a tensor; ops on it are recorded when the variable is trainable.
  const Tensor& value() const { return impl().value; }
  operator const Tensor&() const { return value(); }  // NOLINT: use a variable wherever a tensor goes
  const Shape& shape() const { return value().shape(); }
  DType dtype() const { return value().dtype(); }

  // Whether the variable is read by row gathers (an Embedding table sets it): its
  // gradient is then mostly the rows a batch read, and data-parallel training exchanges
  // those rows rather than all-reducing the whole table. Shared by every handle.
  bool sparse_gradients() const { return impl().sparse_gradients; }
  void set_sparse_gradients(bool sparse) const { impl_->sparse_gradients = sparse; }

  // Overwrites the value in place (optimizer updates, loading weights). Throws
  // ShapeError / DTypeError naming the variable if `new_value` does not match.
  void assign(const Tensor& new_value) const;

 private:
  struct Impl {
    std::string path;
    Tensor value;
    bool sparse_gradients = false;
  };
  const Impl& impl() const {
    if (!impl_) throw Error("Variable: use of an undefined variable");
    return *impl_;
  }
  std::shared_ptr<Impl> impl_;
};

}  // namespace chorus::autograd
