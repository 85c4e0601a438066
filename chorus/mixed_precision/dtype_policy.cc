#include "chorus/mixed_precision/dtype_policy.h"

#include <mutex>

#include "chorus/core/error.h"

namespace chorus::mixed_precision {
namespace {

std::mutex policy_mutex;
DTypePolicy& global() {
  static DTypePolicy policy;
  return policy;
}

}  // namespace

DTypePolicy::DTypePolicy(std::string_view name) : name_(name) {
  if (name == "float32") {
    compute_dtype_ = kFloat32;
  } else if (name == "mixed_bfloat16") {
    compute_dtype_ = kBFloat16;
  } else {
    throw_error<ValueError>(
        "DTypePolicy: unknown policy '{}'. chorus supports 'float32' and 'mixed_bfloat16' (float32 weights; "
        "it has no float16, and keeps weights in float32)",
        name);
  }
}

void set_global_policy(const DTypePolicy& policy) {
  std::lock_guard lock(policy_mutex);
  global() = policy;
}

DTypePolicy global_policy() {
  std::lock_guard lock(policy_mutex);
  return global();
}

}  // namespace chorus::mixed_precision
