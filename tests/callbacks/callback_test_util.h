// A tiny compiled model and data for the callback tests.
#pragma once

#include <memory>

#include "chorus/chorus.h"

namespace chorus::testing {

// y = x @ kernel + bias on 3 features (one Dense(1)), compiled with SGD and mean squared
// error: built at construction, so weights() and optimizer() are ready for callbacks.
inline std::unique_ptr<models::Model> linear_model(optimizers::LearningRate learning_rate = 0.1) {
  Tensor x = layers::Input({3});
  Tensor y = layers::Dense(1)(x);
  auto model = std::make_unique<models::Model>(x, y);
  model->compile({.optimizer = optimizers::SGD(std::move(learning_rate)), .loss = "mse"});
  return model;
}

struct LinearData {
  Tensor x, y;
};
// `n` rows of x in [-1, 1) and y = x @ (1, 2, 3) + 0.5.
inline LinearData linear_data(int64_t n, uint64_t seed) {
  Generator gen(seed);
  Tensor x = uniform(Shape{n, 3}, gen, -1, 1);
  Tensor y = Tensor::empty(Shape{n, 1}, kFloat32);
  const float* px = x.data<float>();
  for (int64_t i = 0; i < n; ++i) y.data<float>()[i] = px[3 * i] + 2 * px[3 * i + 1] + 3 * px[3 * i + 2] + 0.5f;
  return {x, y};
}

}  // namespace chorus::testing
