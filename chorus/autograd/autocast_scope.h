// AutocastScope: while one is open on a thread, reading a floating-point Variable gives
// its value cast to the scope's dtype (Keras's AutocastScope) — how a layer under a
// mixed precision policy computes in bfloat16 on float32 weights. Layer::operator() opens
// one around call() when the layer's policy is mixed (and a non-casting one for a layer
// that opts out inside one); the gradient flows back through the cast to the variable.
// One thread's scopes nest like a stack and belong to that thread.
#pragma once

#include <optional>
#include <unordered_map>

#include "chorus/core/tensor.h"

namespace chorus::autograd {

class AutocastScope {
 public:
  // The differentiable cast (ops::cast), passed in because ops sit above autograd.
  using CastFn = Tensor (*)(const Tensor&, DType);

  // `dtype` empty: no casting, which shadows an enclosing scope (a layer that keeps its
  // weights' dtype, such as LayerNormalization, called inside one that casts).
  AutocastScope(std::optional<DType> dtype, CastFn cast);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

  // The innermost open scope of this thread, or nullptr.
  static AutocastScope* current() { return current_; }

  const std::optional<DType>& dtype() const { return dtype_; }
  // `value` as this scope reads it: cast when it is floating and of another dtype. One
  // cast per value per scope (a weight read twice is cast once); the reference lives as
  // long as the scope.
  const Tensor& cast(const Tensor& value);

 private:
  std::optional<DType> dtype_;
  CastFn cast_;
  AutocastScope* previous_;
  // Keyed by the source's storage handle; the source is held so its address stays its own.
  std::unordered_map<const void*, std::pair<Tensor, Tensor>> casts_;
  static inline thread_local AutocastScope* current_ = nullptr;
};

}  // namespace chorus::autograd
