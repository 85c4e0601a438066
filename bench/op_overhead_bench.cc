// Per-op overhead: a chain of 100 elementwise ops on 64-element tensors, recorded on the
// gradient tape, forward + backward, on one core. The work per op is tiny, so the time is
// what the engine costs per op (allocation, dispatch, recording, backward bookkeeping).
// References in the same run: the same chain unrecorded (forward only), and, when
// bench/op_overhead_torch.py finds PyTorch, its eager autograd on the same chain.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/bench_util.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/chorus.h"

namespace ch = chorus;

int main(int argc, char** argv) {
  constexpr int kOps = 100;  // 50 x (multiply, add)
  ch::backend::cpu::set_intra_op_threads(1);
  ch::Generator gen(0);
  ch::autograd::Variable w("w", ch::uniform({64}, gen, 0.9, 1.1));
  const ch::Tensor x = ch::uniform({64}, gen);
  const ch::Tensor c = ch::uniform({64}, gen, -0.01, 0.01);

  auto chain = [&] {
    ch::Tensor h = x;
    for (int i = 0; i < kOps / 2; ++i) h = h * w + c;
    return h;
  };
  const double forward_only = ch::bench::median_seconds([&] {
    ch::autograd::NoGradGuard no_grad;
    chain();
  }, 200, 9);
  const double recorded = ch::bench::median_seconds([&] {
    ch::autograd::GradientTape tape;
    ch::Tensor h = chain();
    tape.gradient(h, {w});  // backward through all 100 records (seed: ones)
  }, 200, 9);

  nlohmann::json record = {{"bench", "op_overhead"},
                           {"ops", kOps},
                           {"elements", 64},
                           {"threads", 1},
                           {"us_per_op_forward_only", forward_only / kOps * 1e6},
                           {"us_per_op_forward_backward", recorded / kOps * 1e6},
                           {"target_us_per_op", 1.0}};
  // The PyTorch figure, if the caller measured it in this run (bench/run_op_overhead).
  if (argc > 1) {
    const double torch_us = std::atof(argv[1]);
    record["torch_us_per_op_forward_backward"] = torch_us;
    record["ratio_to_torch"] = (recorded / kOps * 1e6) / torch_us;
  }
  ch::bench::emit(record);
  return 0;
}
