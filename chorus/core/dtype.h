// Element types of a Tensor and their properties. Pure values; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "chorus/core/bfloat16.h"
#include "chorus/core/error.h"

namespace chorus {

// kString: UTF-8 strings (tf.string). Each element is a std::string object owned by
// its Storage (see Storage::allocate_strings), so a string tensor is never copied as raw
// bytes; numeric ops refuse it with a DTypeError naming the op.
// kUInt8: bytes 0-255 (Keras's "uint8": what keras.datasets.mnist.load_data returns). A
// storage dtype: tensors of it are created, printed, copied, sliced, batched, concatenated,
// gathered, selected (where), cached and saved, and ops::cast converts them to and from
// every numeric dtype and bool; arithmetic, reductions and matmul refuse it with a
// DTypeError that says to cast first (as the Keras tutorials do, per batch).
// The values are stable: the dataset cache file stores them (kUInt8 came after kString).
enum class DType : uint8_t { kFloat32, kBFloat16, kInt32, kInt64, kBool, kString, kUInt8 };

inline constexpr DType kFloat32 = DType::kFloat32;
inline constexpr DType kBFloat16 = DType::kBFloat16;
inline constexpr DType kInt32 = DType::kInt32;
inline constexpr DType kInt64 = DType::kInt64;
inline constexpr DType kBool = DType::kBool;
inline constexpr DType kString = DType::kString;
inline constexpr DType kUInt8 = DType::kUInt8;

// Bytes per element (for kString: one std::string object; its characters live on the heap).
constexpr size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kBFloat16: return 2;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kBool: return 1;
    case DType::kString: return sizeof(std::string);
    case DType::kUInt8: return 1;
  }
  return 0;
}

// Keras's names: "float32", "bfloat16", "int32", "int64", "bool", "string", "uint8".
std::string_view dtype_name(DType dtype);

// The DType with Keras's name `name` (dtype_name's inverse). Throws ValueError
// "unknown dtype 'float64'; expected one of float32, bfloat16, int32, int64, bool, string, uint8".
DType parse_dtype(std::string_view name);

constexpr bool is_floating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kBFloat16;
}
// int32 or int64: the dtypes of indices and of integer arithmetic. uint8 is not among
// them (a storage dtype: see kUInt8).
constexpr bool is_integer(DType dtype) {
  return dtype == DType::kInt32 || dtype == DType::kInt64;
}
constexpr bool is_string(DType dtype) { return dtype == DType::kString; }

// The C++ type that stores one element of a DType, and back.
template <class T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kFloat32; };
template <> struct DTypeOf<bfloat16> { static constexpr DType value = DType::kBFloat16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };
template <> struct DTypeOf<std::string> { static constexpr DType value = DType::kString; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kUInt8; };
template <class T> inline constexpr DType dtype_of = DTypeOf<T>::value;

// Calls fn(T{}) with T the element type of `dtype`: the one switch over numeric dtypes
// that typed code goes through. Throws DTypeError for kString — numeric kernels never see
// strings; code that handles strings tests is_string(dtype) before it visits. Ops check
// first (check_not_string) so that their message names the op.
template <class Fn>
decltype(auto) visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: return fn(float{});
    case DType::kBFloat16: return fn(bfloat16{});
    case DType::kInt32: return fn(int32_t{});
    case DType::kInt64: return fn(int64_t{});
    case DType::kBool: return fn(bool{});
    case DType::kUInt8: return fn(uint8_t{});
    case DType::kString:
      throw DTypeError("visit_dtype: expected a numeric or bool dtype, got string (a numeric op on a string tensor)");
  }
  return fn(float{});
}

// Throws DTypeError "`op`: expected a numeric tensor, got dtype string" when `dtype` is
// kString: the check every numeric op makes at its entry.
inline void check_not_string(const char* op, DType dtype) {
  if (dtype == DType::kString) {
    throw DTypeError(std::string(op) + ": expected a numeric tensor, got dtype string");
  }
}

// Throws DTypeError "`op`: expected a float32, bfloat16, int32 or int64 tensor, got uint8
// (cast it first: ops.cast(x, "float32"))" when `dtype` is kUInt8: the check of the ops
// that compute (arithmetic, reductions, matmul), which uint8 storage does not reach.
void check_not_uint8(const char* op, DType dtype);

}  // namespace chorus
