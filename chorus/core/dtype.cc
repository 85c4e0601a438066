#include "chorus/core/dtype.h"

#include "chorus/core/error.h"

namespace chorus {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
    case DType::kString: return "string";
    case DType::kUInt8: return "uint8";
  }
  return "unknown";
}

DType parse_dtype(std::string_view name) {
  constexpr DType kAll[] = {kFloat32, kBFloat16, kInt32, kInt64, kBool, kString, kUInt8};
  for (DType dtype : kAll) {
    if (dtype_name(dtype) == name) return dtype;
  }
  throw_error<ValueError>("unknown dtype '{}'; expected one of float32, bfloat16, int32, int64, bool, string, uint8",
                          name);
}

void check_not_uint8(const char* op, DType dtype) {
  if (dtype == DType::kUInt8) {
    throw_error<DTypeError>("{}: expected a float32, bfloat16, int32 or int64 tensor, got uint8 (cast it first: "
                            "ops.cast(x, \"float32\"))",
                            op);
  }
}

}  // namespace chorus
