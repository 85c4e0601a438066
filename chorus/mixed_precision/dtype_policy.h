// DTypePolicy: the dtypes a layer computes in and keeps its weights in (Keras's
// keras.DTypePolicy), and the process-wide policy new layers take (Keras's
// keras.mixed_precision.set_global_policy). A value type; the global policy may be set
// and read from any thread, and a layer reads it once, when it is constructed.
#pragma once

#include <string>
#include <string_view>

#include "chorus/core/dtype.h"

namespace chorus::mixed_precision {

class DTypePolicy {
 public:
  // "float32" (the default) or "mixed_bfloat16": weights in float32, computation in
  // bfloat16. Keras's other names are refused with a ValueError listing these two:
  // chorus has no float16 (so no loss scaling either), and keeps weights in float32 so
  // the optimizer updates them at full precision.
  explicit DTypePolicy(std::string_view name = "float32");
  DTypePolicy(const char* name) : DTypePolicy(std::string_view(name)) {}  // NOLINT: layer.set_dtype_policy("float32")

  const std::string& name() const { return name_; }
  DType compute_dtype() const { return compute_dtype_; }
  DType variable_dtype() const { return kFloat32; }
  // Whether computation and weights differ in dtype (what makes layers autocast).
  bool is_mixed() const { return compute_dtype_ != variable_dtype(); }

  bool operator==(const DTypePolicy& other) const { return name_ == other.name_; }

 private:
  std::string name_;
  DType compute_dtype_;
};

// The policy layers constructed from now on take (those made before keep theirs).
void set_global_policy(const DTypePolicy& policy);
DTypePolicy global_policy();

}  // namespace chorus::mixed_precision
