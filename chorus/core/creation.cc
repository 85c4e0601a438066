#include "chorus/core/creation.h"

#include <algorithm>
#include <cmath>

namespace chorus {

Tensor zeros(const Shape& shape, DType dtype, Device device) {
  Tensor out = Tensor::empty(shape, dtype, device);
  if (dtype == kString) return out;  // empty strings, as tf.zeros(dtype=tf.string)
  std::memset(out.raw_data(), 0, out.nbytes());
  note_constant(out);
  return out;
}

Tensor ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  check_not_string("full", dtype);
  Tensor out = Tensor::empty(shape, dtype, device);
  visit_dtype(dtype, [&](auto v) {
    using T = decltype(v);
    T* data = static_cast<T*>(out.raw_data());
    T fill;
    if constexpr (std::is_same_v<T, bfloat16>) {
      fill = bfloat16(static_cast<float>(value));
    } else {
      fill = static_cast<T>(value);
    }
    std::fill(data, data + out.numel(), fill);
  });
  note_constant(out);
  return out;
}

Tensor scalar(double value, DType dtype, Device device) { return full(Shape{}, value, dtype, device); }

Tensor arange(double start, double stop, double step, DType dtype) {
  check_not_string("arange", dtype);
  if (step == 0) throw_error<ValueError>("arange: step must not be 0. Received: step=0");
  const double span = (stop - start) / step;
  const int64_t n = span > 0 ? static_cast<int64_t>(std::ceil(span)) : 0;
  Tensor out = Tensor::empty(Shape{n}, dtype);
  visit_dtype(dtype, [&](auto v) {
    using T = decltype(v);
    T* data = static_cast<T*>(out.raw_data());
    for (int64_t i = 0; i < n; ++i) {
      const double x = start + static_cast<double>(i) * step;
      if constexpr (std::is_same_v<T, bfloat16>) {
        data[i] = bfloat16(static_cast<float>(x));
      } else {
        data[i] = static_cast<T>(x);
      }
    }
  });
  note_constant(out);
  return out;
}

}  // namespace chorus
