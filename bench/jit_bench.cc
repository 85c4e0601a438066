// The compiled function (jit::Function) against the same function run eagerly, in the
// same run, alternated:
//   chain      y = gelu(x * s + b) + r over 1M and 16M float32 elements (a transformer
//              block's tail without its matmul): eager makes four passes over memory, the
//              fused pass one. Also against the floor: memcpy moving the bytes one pass
//              must move (x, r read, y written), as elementwise_bench.
//   gradients  an MNIST MLP's loss and gradients (784-128-10, relu, softmax cross-entropy
//              from ops, batch 64), tape inside the function: what a compiled train step
//              computes but the optimizer's update. Against its matmuls alone (the five
//              products of forward and backward, as ops::matmul runs them).
// Default threads and 1 thread. Usage: jit_bench [--case chain|gradients|all]. One JSON
// line per (case, size, threads) (bench_util.h emit).
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "chorus/autograd/tape.h"
#include "chorus/autograd/variable.h"
#include "chorus/backend/cpu/isa.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/core/creation.h"
#include "chorus/core/random.h"
#include "chorus/jit/function.h"
#include "chorus/ops/ops.h"

namespace chorus {
namespace {

using nlohmann::json;

// Medians of alternated samples of each callable, in seconds per call.
std::vector<double> alternate(const std::vector<std::function<void()>>& fns, int rounds = 5) {
  int iters = 1;
  for (const auto& fn : fns) iters = std::max(iters, bench::calibrate_iters(fn, 0.05));
  std::vector<std::vector<double>> samples(fns.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t f = 0; f < fns.size(); ++f) samples[f].push_back(bench::median_seconds(fns[f], iters, 3, 1));
  }
  std::vector<double> out;
  for (auto& s : samples) out.push_back(bench::median(s));
  return out;
}

void parallel_memcpy(char* dst, const char* src, int64_t bytes) {
  backend::cpu::parallel_for(bytes, int64_t{1} << 20, [&](int64_t begin, int64_t end) {
    std::memcpy(dst + begin, src + begin, static_cast<size_t>(end - begin));
  });
}

void chain(int64_t elements, int threads) {
  backend::cpu::set_intra_op_threads(threads);
  Generator gen(1);
  const Tensor x = uniform({elements}, gen, -3, 3), r = uniform({elements}, gen, -3, 3);
  const Tensor s = scalar(0.7), b = scalar(0.1);
  auto fn = [&](std::span<const Tensor> a) {
    return std::vector<Tensor>{ops::add(ops::gelu(ops::add(ops::multiply(a[0], s), b), true), a[1])};
  };
  jit::Function compiled("chain", fn);
  const std::vector<Tensor> args = {x, r};
  compiled(args);
  const int64_t bytes = 3 * elements * static_cast<int64_t>(sizeof(float));
  std::vector<char> src(static_cast<size_t>(bytes / 2), 1), dst(static_cast<size_t>(bytes / 2), 0);
  const std::vector<double> t = alternate({[&] { fn(args); }, [&] { compiled(args); },
                                           [&] { parallel_memcpy(dst.data(), src.data(), bytes / 2); }});
  bench::emit({{"bench", "jit"}, {"case", "chain"}, {"elements", elements}, {"threads", threads},
               {"isa", std::string(backend::cpu::isa_name(backend::cpu::active_isa()))},
               {"eager_seconds", t[0]}, {"jit_seconds", t[1]}, {"floor_seconds", t[2]},
               {"jit_speedup", t[0] / t[1]}, {"eager_ratio_to_floor", t[2] / t[0]},
               {"jit_ratio_to_floor", t[2] / t[1]}});
}

void gradients(int threads) {
  backend::cpu::set_intra_op_threads(threads);
  constexpr int64_t kBatch = 64, kIn = 784, kHidden = 128, kClasses = 10;
  Generator gen(2);
  autograd::Variable w1("w1", uniform({kIn, kHidden}, gen, -0.05, 0.05)), b1("b1", zeros({kHidden})),
      w2("w2", uniform({kHidden, kClasses}, gen, -0.2, 0.2)), b2("b2", zeros({kClasses}));
  const Tensor x = uniform({kBatch, kIn}, gen, 0, 1);
  std::vector<float> hot(kBatch * kClasses, 0.f);
  for (int64_t i = 0; i < kBatch; ++i) hot[static_cast<size_t>(i * kClasses + i % kClasses)] = 1.f;
  const Tensor y = from_values<float>(hot, {kBatch, kClasses});
  auto fn = [&](std::span<const Tensor> a) {
    autograd::GradientTape tape;
    Tensor h = ops::relu(ops::matmul(a[0], w1, b1, {}));
    Tensor logp = ops::log_softmax(ops::matmul(h, w2, b2, {}), -1);
    Tensor loss = ops::negative(ops::mean(ops::sum(ops::multiply(logp, a[1]), -1)));
    std::vector<Tensor> out = tape.gradient(loss, {w1.value(), b1.value(), w2.value(), b2.value()});
    out.push_back(loss);
    return out;
  };
  jit::Function compiled("gradients", fn);
  const std::vector<Tensor> args = {x, y};
  compiled(args);
  const Tensor h = ops::relu(ops::matmul(x, w1)), g2 = uniform({kBatch, kClasses}, gen), g1 = ops::matmul(g2, ops::transpose(w2.value()));
  auto matmuls = [&] {
    ops::matmul(x, w1);
    ops::matmul(h, w2);
    ops::matmul(h, g2, {.transpose_a = true});
    ops::matmul(g2, w2, {.transpose_b = true});
    ops::matmul(x, g1, {.transpose_a = true});
  };
  const std::vector<double> t = alternate({[&] { fn(args); }, [&] { compiled(args); }, matmuls});
  bench::emit({{"bench", "jit"}, {"case", "gradients"}, {"batch", kBatch}, {"threads", threads},
               {"isa", std::string(backend::cpu::isa_name(backend::cpu::active_isa()))},
               {"eager_steps_per_s", 1 / t[0]}, {"jit_steps_per_s", 1 / t[1]}, {"jit_speedup", t[0] / t[1]},
               {"eager_ratio_to_matmuls", t[2] / t[0]}, {"jit_ratio_to_matmuls", t[2] / t[1]}});
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  std::string which = "all";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--case") which = argv[i + 1];
  }
  const int default_threads = chorus::backend::cpu::intra_op_threads();
  for (int threads : {default_threads, 1}) {
    if (which == "all" || which == "chain") {
      for (int64_t elements : {int64_t{1} << 20, int64_t{1} << 24}) chorus::chain(elements, threads);
    }
    if (which == "all" || which == "gradients") chorus::gradients(threads);
  }
  return 0;
}
