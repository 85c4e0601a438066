// A user's program against the installed chorus: fits a small MLP to y = tanh(2·x0) + x1²
// with compile/fit/evaluate and exits 0 only if the held-out error fell tenfold.
#include <cstdio>

#include "chorus/chorus.h"

namespace ch = chorus;

int main() {
  ch::Generator gen(7);
  const ch::Tensor x = ch::uniform({4096, 2}, gen, -1.0, 1.0);
  const ch::Tensor x0 = ch::ops::slice(x, {0, 0}, {4096, 1}), x1 = ch::ops::slice(x, {0, 1}, {4096, 1});
  const ch::Tensor y = ch::ops::tanh(2 * x0) + ch::ops::square(x1);

  auto inputs = ch::Input({2});
  auto h = ch::layers::Dense(32, {.activation = "tanh"})(inputs);
  auto outputs = ch::layers::Dense(1)(h);
  ch::Model model(inputs, outputs);
  model.compile({.optimizer = ch::optimizers::Adam(0.01), .loss = ch::losses::MeanSquaredError()});

  const double before = model.evaluate(x, y, {.verbose = 0}).at("loss");
  model.fit(x, y, {.epochs = 20, .batch_size = 64, .verbose = 0, .validation_split = 0.25});
  const double after = model.evaluate(x, y, {.verbose = 0}).at("loss");
  std::printf("mean squared error: %.5f before training, %.5f after\n", before, after);
  return after < before / 10 ? 0 : 1;
}
