// Data-parallel scaling on one host: the MNIST tutorial's MLP (784-256-256-10, Adam,
// sparse CE from logits) trained with DataParallel over 2 logical devices of one core
// each, against 1 device with one core, measured alternately in the same run.
//   scaling   fit throughput (examples/s) at batch 512 (the target: >= 1.8x) and
//             at 64 and 2048; ratio = 2 devices / 1 device; eagerly and with jit_compile
//             (each replica's compiled step, the reduction streamed from its nodes),
//             with jit's gain over eager on each device count.
// Synthetic inputs (speed does not depend on pixel values). Usage:
//   data_parallel_bench [--steps N] [--repeats R] [--batch B]...
// One JSON line per measurement (bench_util.h emit).
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/chorus.h"
#include "tools/chorus/recipes/mnist_tutorial.h"

namespace ch = chorus;

namespace {

struct Setup {
  std::unique_ptr<ch::models::Model> model;
  ch::Tensor x, y;
};

Setup make(int devices, int64_t batch, int steps, bool jit) {
  ch::distribution::set_distribution(nullptr);
  if (devices > 1) {
    ch::distribution::set_distribution(ch::distribution::DataParallel(
        std::vector<ch::Device>{ch::Device::cpu(0), ch::Device::cpu(1)}));
  }
  Setup s{ch::recipes::get_compiled_model(), {}, {}};
  ch::distribution::set_distribution(nullptr);
  s.model->set_jit_compile(jit);
  ch::Generator gen(1);
  s.x = ch::uniform(ch::Shape{batch * steps, 784}, gen, 0, 1);
  s.y = ch::Tensor::empty(ch::Shape{batch * steps}, ch::kInt32);
  for (int64_t i = 0; i < batch * steps; ++i) s.y.data<int32_t>()[i] = static_cast<int32_t>(i % 10);
  // Warm-up: builds the optimizer slots, the replica threads and the buckets, traces and
  // tunes the compiled steps, and touches every page the timed epochs use.
  s.model->fit(s.x, s.y, {.batch_size = batch, .verbose = 0, .shuffle = false});
  return s;
}

double seconds_per_epoch(Setup& s, int64_t batch) {
  const auto start = std::chrono::steady_clock::now();
  s.model->fit(s.x, s.y, {.batch_size = batch, .verbose = 0, .shuffle = false});
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 40, repeats = 5;
  std::vector<int64_t> batches;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--steps") steps = std::atoi(argv[i + 1]);
    if (flag == "--repeats") repeats = std::atoi(argv[i + 1]);
    if (flag == "--batch") batches.push_back(std::atoll(argv[i + 1]));
  }
  if (batches.empty()) batches = {512, 64, 2048};
  ch::set_cpu_devices(2);      // two logical devices, one core each here
  ch::backend::cpu::set_intra_op_threads(1);  // the single device: one core
  for (int64_t batch : batches) {
    // [jit][devices - 1]
    Setup setups[2][2] = {{make(1, batch, steps, false), make(2, batch, steps, false)},
                          {make(1, batch, steps, true), make(2, batch, steps, true)}};
    std::vector<double> seconds[2][2];
    for (int r = 0; r < repeats; ++r) {  // alternate, so drift hits every setting alike
      for (int jit = 0; jit < 2; ++jit) {
        for (int d = 0; d < 2; ++d) seconds[jit][d].push_back(seconds_per_epoch(setups[jit][d], batch));
      }
    }
    const double examples = static_cast<double>(batch * steps);
    double rates[2][2];
    for (int jit = 0; jit < 2; ++jit) {
      for (int d = 0; d < 2; ++d) rates[jit][d] = examples / ch::bench::median(seconds[jit][d]);
    }
    for (int jit = 0; jit < 2; ++jit) {
      ch::bench::emit({{"bench", "data_parallel"},
                       {"measure", "scaling"},
                       {"model", "mnist_mlp"},
                       {"jit", jit == 1},
                       {"batch", batch},
                       {"steps", steps},
                       {"repeats", repeats},
                       {"one_device_examples_per_s", rates[jit][0]},
                       {"two_devices_examples_per_s", rates[jit][1]},
                       {"ratio", rates[jit][1] / rates[jit][0]},
                       {"jit_vs_eager_one_device", rates[1][0] / rates[0][0]},
                       {"jit_vs_eager_two_devices", rates[1][1] / rates[0][1]},
                       {"target", batch == 512 ? nlohmann::json(1.8) : nlohmann::json(nullptr)}});
    }
  }
  return 0;
}
