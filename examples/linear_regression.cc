// The engine demo: fits y = X·w + b to noisy synthetic data with the gradient tape and
// plain gradient descent, then compares the learned parameters with the true ones.
// No Model or fit here: mnist_mlp.cc has those.
#include <cstdio>

#include "chorus/chorus.h"

namespace ch = chorus;

int main() {
  constexpr int64_t kExamples = 4096, kFeatures = 8;
  constexpr int kSteps = 200;
  constexpr double kLearningRate = 0.1;

  ch::Generator gen(42);
  const ch::Tensor true_w = ch::normal({kFeatures, 1}, gen);
  const ch::Tensor true_b = ch::full({1}, 0.5);
  const ch::Tensor x = ch::normal({kExamples, kFeatures}, gen);
  const ch::Tensor y = ch::ops::matmul(x, true_w) + true_b + 0.01 * ch::normal({kExamples, 1}, gen);

  ch::autograd::Variable w("linear/kernel", ch::zeros({kFeatures, 1}));
  ch::autograd::Variable b("linear/bias", ch::zeros({1}));
  for (int step = 1; step <= kSteps; ++step) {
    ch::autograd::GradientTape tape;
    const ch::Tensor error = ch::ops::matmul(x, w) + b - y;
    const ch::Tensor loss = ch::ops::mean(ch::ops::square(error));
    const auto grads = tape.gradient(loss, {w, b});
    ch::autograd::NoGradGuard no_grad;
    w.assign(w - kLearningRate * grads[0]);
    b.assign(b - kLearningRate * grads[1]);
    if (step == 1 || step % 40 == 0) std::printf("step %3d  mse %.6f\n", step, loss.item<double>());
  }
  std::printf("\nlearned w: %s\ntrue w:    %s\n", ch::ops::reshape(w, {-1}).to_string().c_str(),
              ch::ops::reshape(true_w, {-1}).to_string().c_str());
  std::printf("learned b: %.4f   true b: %.4f\n", b.value().item<double>(), true_b.item<double>());
  const double max_error = ch::ops::max(ch::ops::abs(w - true_w)).item<double>();
  std::printf("max |w - true_w| = %.4f -> %s\n", max_error, max_error < 0.01 ? "fit" : "did NOT fit");
  return max_error < 0.01 ? 0 : 1;
}
