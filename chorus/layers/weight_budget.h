// WeightBudget: a bound on the bytes of weights that layers may create on this thread
// while it lives, for code that builds a model from outside bytes — load_model must not
// allocate a 10^12-unit Dense because a config.json says so. Scoped to one thread; a
// nested budget replaces the outer one until it ends.
#pragma once

#include <cstdint>
#include <string>

#include "chorus/core/dtype.h"
#include "chorus/core/shape.h"

namespace chorus::layers {

class WeightBudget {
 public:
  // Layers may create at most `bytes` bytes of weights on this thread until this object
  // is destroyed. `source` says where the bound comes from, for errors
  // ("/ckpt/model.weights.safetensors holds 1024 bytes").
  WeightBudget(int64_t bytes, std::string source);
  ~WeightBudget();
  WeightBudget(const WeightBudget&) = delete;
  WeightBudget& operator=(const WeightBudget&) = delete;

  // Called by Layer::add_weight before it allocates. Without a budget on this thread,
  // does nothing; else takes the weight's bytes from it, or throws ValueError naming the
  // weight, its shape and the budget's source when they do not fit.
  static void charge(const std::string& weight_path, const Shape& shape, DType dtype);

 private:
  int64_t left_;
  std::string source_;
  WeightBudget* outer_;
};

}  // namespace chorus::layers
