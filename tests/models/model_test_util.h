// Small models and data shared by the model tests.
#pragma once

#include <cstring>
#include <memory>

#include "chorus/chorus.h"
#include "tests/testing/test_util.h"

namespace chorus::testing {

// The tutorial's MLP shape at a test-friendly size: inputs -> Dense(hidden, relu) -> Dense(classes).
inline std::unique_ptr<models::Model> small_mlp(int64_t inputs = 4, int64_t hidden = 8, int64_t classes = 3) {
  Tensor x = layers::Input({inputs});
  Tensor h = layers::Dense(hidden, {.activation = "relu"})(x);
  Tensor y = layers::Dense(classes)(h);
  return std::make_unique<models::Model>(x, y);
}

// A linearly separable 3-class problem: the class is the argmax of the first 3 features.
struct Blobs {
  Tensor x, y;
};
inline Blobs separable_blobs(int64_t n, uint64_t seed) {
  Generator gen(seed);
  Tensor x = uniform(Shape{n, 4}, gen, -1, 1);
  Tensor y = Tensor::empty(Shape{n}, kInt32);
  const float* px = x.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    int best = 0;
    for (int c = 1; c < 3; ++c) best = px[i * 4 + c] > px[i * 4 + best] ? c : best;
    y.data<int32_t>()[i] = best;
  }
  return {x, y};
}

}  // namespace chorus::testing
