// The element-wise reductions both communicators run, for every ElementType: one
// definition, so a LocalCommunicator and a Gloo one combine values alike. Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "chorus/comm/communicator.h"
#include "chorus/core/bfloat16.h"

namespace chorus::comm::kernels {

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    return false;
  }
}

// a op b for one element. Max and min propagate NaN instead of dropping it; bfloat16
// computes in float32 and rounds once.
template <class T>
T combine(ReduceOp op, T a, T b) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    return bfloat16(combine<float>(op, static_cast<float>(a), static_cast<float>(b)));
  } else {
    switch (op) {
      case ReduceOp::kSum:
        if constexpr (std::is_same_v<T, uint8_t>) {
          return a;  // refused before any kernel runs (check_reduction)
        } else {
          return a + b;
        }
      case ReduceOp::kMax: return b > a || is_nan(b) ? b : a;
      case ReduceOp::kMin: return b < a || is_nan(b) ? b : a;
    }
    return a;
  }
}

// The C++ type of an ElementType's elements (bytes as uint8_t).
template <class Fn>
decltype(auto) visit_element_type(ElementType type, Fn&& fn) {
  switch (type) {
    case ElementType::kFloat32: return fn(float{});
    case ElementType::kFloat64: return fn(double{});
    case ElementType::kBFloat16: return fn(bfloat16{});
    case ElementType::kInt32: return fn(int32_t{});
    case ElementType::kInt64: return fn(int64_t{});
    case ElementType::kBytes: return fn(uint8_t{});
  }
  return fn(uint8_t{});
}

// out[i] = a[i] op b[i] for i < n; out may be a or b. Written per op so each loop is one
// the compiler vectorises.
template <class T, ReduceOp Op>
void reduce(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = combine<T>(Op, x[i], y[i]);
}

using ReduceFn = void (*)(void* out, const void* a, const void* b, size_t n);

template <class T>
ReduceFn reduce_fn(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax: return &reduce<T, ReduceOp::kMax>;
    case ReduceOp::kMin: return &reduce<T, ReduceOp::kMin>;
    case ReduceOp::kSum: break;
  }
  return &reduce<T, ReduceOp::kSum>;
}

inline ReduceFn reduce_fn(ElementType type, ReduceOp op) {
  return visit_element_type(type, [&](auto t) { return reduce_fn<decltype(t)>(op); });
}

}  // namespace chorus::comm::kernels
