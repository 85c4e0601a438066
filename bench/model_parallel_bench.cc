// Model parallelism on one host (issue 21's benchmarks):
//   tensor_parallel  fit throughput (examples/s) of Megatron MLP blocks — Dense(d, 4d,
//                    gelu) split by columns, then Dense(4d, d) by rows — on a (1, 2) mesh of
//                    two devices with one core each, against one device with one core
//                    running the whole layers (the target: >= 1.6x), measured alternately.
//   memory_budget    a model whose weights and Adam state exceed CHORUS_DEVICE_MEMORY_LIMIT:
//                    one device refuses it before the first step (the error is recorded);
//                    4-way ModelParallel trains it, and the largest device's bytes are
//                    recorded against the limit.
// Synthetic data. Usage: model_parallel_bench [--steps N] [--repeats R] [--width D]
// One JSON line per measurement (bench_util.h emit).
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/chorus.h"

namespace ch = chorus;
namespace dist = chorus::distribution;

namespace {

std::vector<ch::Device> first_devices(int n) {
  std::vector<ch::Device> out;
  for (int i = 0; i < n; ++i) out.push_back(ch::Device::cpu(i));
  return out;
}

// `blocks` Megatron MLP blocks of width d, under `distribution` (nullptr: one device).
std::unique_ptr<ch::Model> megatron_mlp(int64_t d, int blocks, const std::shared_ptr<dist::Distribution>& distribution) {
  dist::set_distribution(distribution);
  ch::Tensor x = ch::layers::Input({d});
  ch::Tensor h = x;
  for (int b = 0; b < blocks; ++b) {
    const std::string up = "up" + std::to_string(b), down = "down" + std::to_string(b);
    h = ch::layers::Dense(4 * d, {.activation = "gelu", .name = up})(h);
    h = ch::layers::Dense(d, {.name = down})(h);
  }
  auto model = std::make_unique<ch::Model>(x, h);
  model->compile({.optimizer = "adam", .loss = "mse"});
  dist::set_distribution(nullptr);
  return model;
}

std::shared_ptr<dist::ModelParallel> megatron_parallel(int devices) {
  dist::LayoutMap layouts(dist::DeviceMesh({1, devices}, {"batch", "model"}, first_devices(devices)));
  layouts["up.*/kernel"] = {std::nullopt, "model"};
  layouts["up.*/bias"] = {"model"};
  layouts["down.*/kernel"] = {"model", std::nullopt};
  return std::make_shared<dist::ModelParallel>(layouts);
}

double seconds_per_epoch(ch::Model& model, const ch::Tensor& x, int64_t batch) {
  const auto start = std::chrono::steady_clock::now();
  model.fit(x, x, {.batch_size = batch, .verbose = 0, .shuffle = false});
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void tensor_parallel(int64_t d, int64_t batch, int steps, int repeats) {
  ch::layers::set_random_seed(1);
  auto one = megatron_mlp(d, 2, nullptr);
  ch::layers::set_random_seed(1);
  auto two = megatron_mlp(d, 2, megatron_parallel(2));
  ch::Generator gen(1);
  const ch::Tensor x = ch::uniform(ch::Shape{batch * steps, d}, gen, -1, 1);
  seconds_per_epoch(*one, x, batch);  // warm-up: slots, threads, pages
  seconds_per_epoch(*two, x, batch);
  std::vector<double> t1, t2;
  for (int r = 0; r < repeats; ++r) {  // alternate, so drift hits both alike
    t1.push_back(seconds_per_epoch(*one, x, batch));
    t2.push_back(seconds_per_epoch(*two, x, batch));
  }
  const double examples = static_cast<double>(batch * steps);
  ch::bench::emit({{"bench", "model_parallel"},
                   {"measure", "tensor_parallel"},
                   {"width", d},
                   {"batch", batch},
                   {"one_device_examples_per_second", examples / ch::bench::median(t1)},
                   {"two_devices_examples_per_second", examples / ch::bench::median(t2)},
                   {"ratio", ch::bench::median(t1) / ch::bench::median(t2)},
                   {"max_relative_difference", ch::models::max_relative_difference(one->weights(), two->weights())}});
}

void memory_budget(int64_t d) {
  // One block of width d: 8 d^2 + 5 d floats of weights, three times that with Adam.
  const int64_t whole = 3 * 4 * (8 * d * d + 5 * d) + 8;
  const int64_t limit = whole / 2;
  ::setenv("CHORUS_DEVICE_MEMORY_LIMIT", std::to_string(limit).c_str(), 1);
  ch::Generator gen(2);
  const ch::Tensor x = ch::uniform(ch::Shape{64, d}, gen, -1, 1);
  std::string refusal;
  try {
    megatron_mlp(d, 1, nullptr)->fit(x, x, {.batch_size = 32, .verbose = 0});
  } catch (const ch::ResourceExhaustedError& e) {
    refusal = e.what();
  }
  auto sharded = megatron_mlp(d, 1, megatron_parallel(4));
  const auto start = std::chrono::steady_clock::now();
  sharded->fit(x, x, {.batch_size = 32, .verbose = 0});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const ch::models::StateBytes bytes = ch::models::state_bytes(*sharded);
  ::unsetenv("CHORUS_DEVICE_MEMORY_LIMIT");
  ch::bench::emit({{"bench", "model_parallel"},
                   {"measure", "memory_budget"},
                   {"width", d},
                   {"limit_bytes", limit},
                   {"whole_bytes", bytes.whole},
                   {"largest_device_bytes", bytes.largest()},
                   {"ratio", static_cast<double>(bytes.largest()) / static_cast<double>(bytes.whole)},
                   {"one_device_refused", !refusal.empty()},
                   {"one_device_error", refusal},
                   {"sharded_fit_seconds", seconds}});
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 8, repeats = 5;
  int64_t width = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--steps") steps = std::atoi(argv[i + 1]);
    if (flag == "--repeats") repeats = std::atoi(argv[i + 1]);
    if (flag == "--width") width = std::atoll(argv[i + 1]);
  }
  ch::set_cpu_devices(4);        // two for tensor_parallel, four for memory_budget
  ch::backend::cpu::set_intra_op_threads(1);  // the single device: one core
  tensor_parallel(width, 256, steps, repeats);
  memory_budget(width);
  return 0;
}
