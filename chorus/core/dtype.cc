#include "chorus/core/dtype.h"

namespace chorus {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
    case DType::kString: return "string";
  }
  return "unknown";
}

}  // namespace chorus
