// Elementwise throughput: ops::add, ops::relu and ops::gelu (tanh form) on 1M and 16M
// float32 elements through the public ops (output allocation included), in GB/s where
// bytes = inputs read + output written, against std::memcpy moving the same traffic
// (a copy of half those bytes: read + write) on the same threads, measured alternately
// in the same run. Default threads and 1 thread. Target: ratio >= 0.7 at 16M.
// One JSON line per (op, elements, threads).
#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "chorus/backend/cpu/elementwise_kernels.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/core/random.h"
#include "chorus/ops/elementwise.h"

namespace chorus {
namespace {

struct Case {
  std::string op;
  int inputs;  // tensors read
  std::function<Tensor(const Tensor&, const Tensor&)> run;
};

// memcpy of `bytes` split over the calling thread's intra-op threads, like the ops are.
void parallel_memcpy(char* dst, const char* src, int64_t bytes) {
  constexpr int64_t kGrain = 1 << 20;
  backend::cpu::parallel_for(bytes, kGrain, [&](int64_t begin, int64_t end) {
    std::memcpy(dst + begin, src + begin, static_cast<size_t>(end - begin));
  });
}

void run_case(const Case& c, int64_t elements, int threads) {
  backend::cpu::set_intra_op_threads(threads);
  Generator gen(42);
  const Tensor a = uniform({elements}, gen, -3, 3), b = uniform({elements}, gen, -3, 3);
  const int64_t bytes = (c.inputs + 1) * elements * static_cast<int64_t>(sizeof(float));
  // The reference moves the same traffic: copy bytes / 2 (read it, write it).
  std::vector<char> src(static_cast<size_t>(bytes / 2), 1), dst(static_cast<size_t>(bytes / 2), 0);

  auto op = [&] { c.run(a, b); };
  auto copy = [&] { parallel_memcpy(dst.data(), src.data(), bytes / 2); };
  const int iters = bench::calibrate_iters(op, 0.1);
  // Alternate op and memcpy samples so drift hits both alike; median of each.
  std::vector<double> op_seconds, copy_seconds;
  for (int round = 0; round < 3; ++round) {
    op_seconds.push_back(bench::median_seconds(op, iters, 5, 1));
    copy_seconds.push_back(bench::median_seconds(copy, iters, 5, 1));
  }
  const double seconds = bench::median(op_seconds), copy_s = bench::median(copy_seconds);
  const double gb_per_s = static_cast<double>(bytes) / seconds / 1e9;
  const double memcpy_gb_per_s = static_cast<double>(bytes) / copy_s / 1e9;
  bench::emit({{"bench", "elementwise"},
               {"op", c.op},
               {"elements", elements},
               {"threads", threads},
               {"isa", std::string(backend::cpu::isa_name(backend::cpu::active_isa()))},
               {"seconds", seconds},
               {"gb_per_s", gb_per_s},
               {"memcpy_gb_per_s", memcpy_gb_per_s},
               {"ratio_to_memcpy", gb_per_s / memcpy_gb_per_s}});
}

}  // namespace
}  // namespace chorus

int main() {
  using chorus::Tensor;
  const std::vector<chorus::Case> cases = {
      {"add", 2, [](const Tensor& a, const Tensor& b) { return chorus::ops::add(a, b); }},
      {"relu", 1, [](const Tensor& a, const Tensor&) { return chorus::ops::relu(a); }},
      {"gelu_tanh", 1, [](const Tensor& a, const Tensor&) { return chorus::ops::gelu(a, true); }},
  };
  const int default_threads = chorus::backend::cpu::intra_op_threads();
  for (int threads : {default_threads, 1}) {
    for (int64_t elements : {int64_t{1} << 20, int64_t{1} << 24}) {
      for (const auto& c : cases) chorus::run_case(c, elements, threads);
    }
  }
  return 0;
}
