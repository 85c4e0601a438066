// Optimizer step throughput on the MNIST MLP's variables (784x256, 256, 256x256, 256,
// 256x10, 10: 269,322 float32 parameters): Optimizer::apply_gradients, base overhead
// included, against std::memcpy of the same arrays (parameter bytes x the arrays the step
// touches: variable, gradient and slots), split over the same threads and measured
// alternately in the same run. ratio_to_memcpy = memcpy seconds / step seconds: 1.0 means
// the step runs as fast as copying its arrays once. Default threads and 1 thread.
// One JSON line per (optimizer, threads).
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "chorus/backend/cpu/isa.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/core/random.h"
#include "chorus/optimizers/optimizers.h"

namespace chorus {
namespace {

using autograd::Variable;
using optimizers::Optimizer;

void parallel_memcpy(char* dst, const char* src, int64_t bytes) {
  constexpr int64_t kGrain = 1 << 16;
  backend::cpu::parallel_for(bytes, kGrain, [&](int64_t begin, int64_t end) {
    std::memcpy(dst + begin, src + begin, static_cast<size_t>(end - begin));
  });
}

struct Case {
  std::string name;
  int arrays;  // variable + gradient + slots
  std::function<std::shared_ptr<Optimizer>()> make;
};

void run_case(const Case& c, int threads) {
  backend::cpu::set_intra_op_threads(threads);
  Generator gen(7);
  const std::vector<Shape> shapes = {{784, 256}, {256}, {256, 256}, {256}, {256, 10}, {10}};
  std::vector<Variable> vars;
  std::vector<Tensor> grads;
  int64_t params = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    vars.emplace_back("dense_" + std::to_string(i / 2) + (i % 2 ? "/bias" : "/kernel"),
                      uniform(shapes[i], gen, -0.1, 0.1));
    grads.push_back(uniform(shapes[i], gen, -1e-3, 1e-3));
    params += shapes[i].numel();
  }
  const std::shared_ptr<Optimizer> optimizer = c.make();
  optimizer->build(vars);
  const int64_t bytes = c.arrays * params * static_cast<int64_t>(sizeof(float));
  std::vector<char> src(static_cast<size_t>(bytes), 1), dst(static_cast<size_t>(bytes), 0);

  auto step = [&] { optimizer->apply_gradients(grads, vars); };
  auto copy = [&] { parallel_memcpy(dst.data(), src.data(), bytes); };
  const int iters = bench::calibrate_iters(step, 0.05);
  std::vector<double> step_seconds, copy_seconds;
  for (int round = 0; round < 5; ++round) {
    step_seconds.push_back(bench::median_seconds(step, iters, 5, 1));
    copy_seconds.push_back(bench::median_seconds(copy, iters, 5, 1));
  }
  const double seconds = bench::median(step_seconds), copy_s = bench::median(copy_seconds);
  bench::emit({{"bench", "optimizer"},
               {"optimizer", c.name},
               {"params", params},
               {"arrays", c.arrays},
               {"threads", threads},
               {"isa", std::string(backend::cpu::isa_name(backend::cpu::active_isa()))},
               {"step_us", seconds * 1e6},
               {"memcpy_us", copy_s * 1e6},
               {"params_per_s", static_cast<double>(params) / seconds},
               {"ratio_to_memcpy", copy_s / seconds}});
}

}  // namespace
}  // namespace chorus

int main() {
  using namespace chorus::optimizers;
  const std::vector<chorus::Case> cases = {
      {"adam", 4, [] { return std::make_shared<Adam>(); }},
      {"adamw", 4, [] { return std::make_shared<AdamW>(); }},
      {"sgd_momentum", 3, [] { return std::make_shared<SGD>(SGDOptions{.momentum = 0.9}); }},
      {"adagrad", 3, [] { return std::make_shared<Adagrad>(0.2); }},
      {"rmsprop", 3, [] { return std::make_shared<RMSprop>(); }},
  };
  const int default_threads = chorus::backend::cpu::intra_op_threads();
  for (const auto& c : cases) {
    chorus::run_case(c, default_threads);
    if (default_threads != 1) chorus::run_case(c, 1);
  }
  return 0;
}
