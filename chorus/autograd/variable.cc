#include "chorus/autograd/variable.h"

namespace chorus::autograd {

Variable::Variable(std::string path, Tensor initial_value, bool trainable)
    : impl_(std::make_shared<Impl>(Impl{std::move(path), Tensor(), false})) {
  if (!initial_value.defined()) throw_error<ValueError>("Variable '{}': the initial value is undefined", impl_->path);
  // A handle of its own on the same storage: marking it trainable leaves the caller's
  // tensor (and any tape slot it has) untouched.
  impl_->value = initial_value.view(initial_value.shape());
  if (trainable && !is_floating(impl_->value.dtype())) {
    throw_error<DTypeError>("Variable '{}': a trainable variable must be floating, got dtype {}", impl_->path,
                            dtype_name(impl_->value.dtype()));
  }
  impl_->value.impl()->autograd.trainable = trainable;
}

std::string Variable::name() const {
  const std::string& p = path();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

void Variable::assign(const Tensor& new_value) const {
  const Tensor& v = value();
  if (new_value.dtype() != v.dtype()) {
    throw_error<DTypeError>("Variable '{}': cannot assign a value of dtype {} to a variable of dtype {}", path(),
                            dtype_name(new_value.dtype()), dtype_name(v.dtype()));
  }
  if (new_value.shape() != v.shape()) {
    throw_error<ShapeError>("Variable '{}': cannot assign a value of shape {} to a variable of shape {}", path(),
                            new_value.shape().to_string(), v.shape().to_string());
  }
  v.copy_from(new_value);
}

}  // namespace chorus::autograd
