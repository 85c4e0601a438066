#include "chorus/autograd/autocast_scope.h"

namespace chorus::autograd {

AutocastScope::AutocastScope(std::optional<DType> dtype, CastFn cast)
    : dtype_(dtype), cast_(cast), previous_(current_) {
  current_ = this;
}

AutocastScope::~AutocastScope() { current_ = previous_; }

const Tensor& AutocastScope::cast(const Tensor& value) {
  if (!dtype_ || !is_floating(value.dtype()) || value.dtype() == *dtype_) return value;
  auto [it, inserted] = casts_.try_emplace(value.impl());
  if (inserted) it->second = {value, cast_(value, *dtype_)};
  return it->second.second;
}

}  // namespace chorus::autograd
