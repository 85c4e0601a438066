#include "chorus/layers/weight_budget.h"

#include "chorus/core/error.h"

namespace chorus::layers {
namespace {

// The loading thread's scope (weight_budget.h); layers are built on the thread that loads.
thread_local WeightBudget* active_weight_budget = nullptr;

}  // namespace

WeightBudget::WeightBudget(int64_t bytes, std::string source)
    : left_(bytes), source_(std::move(source)), outer_(active_weight_budget) {
  active_weight_budget = this;
}

WeightBudget::~WeightBudget() { active_weight_budget = outer_; }

void WeightBudget::charge(const std::string& weight_path, const Shape& shape, DType dtype) {
  WeightBudget* budget = active_weight_budget;
  if (budget == nullptr) return;
  auto bytes = static_cast<int64_t>(dtype_size(dtype));
  bool overflow = false;
  for (int64_t d : shape) overflow |= d < 0 || __builtin_mul_overflow(bytes, d, &bytes);
  if (overflow || bytes > budget->left_) {
    throw_error<ValueError>("{}: a weight of shape {} {} needs {} bytes, but {}, and {} of them are left", weight_path,
                            shape.to_string(), dtype_name(dtype),
                            overflow ? std::string("more than 2^63") : std::to_string(bytes), budget->source_,
                            budget->left_);
  }
  budget->left_ -= bytes;
}

}  // namespace chorus::layers
