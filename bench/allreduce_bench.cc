// In-process all-reduce bandwidth: LocalCommunicator::all_reduce (sum) of 1K, 1M, 16M and
// 64M float32 across 2 participant threads (1 intra-op thread each), against a hand-written
// two-thread shared-memory sum of the same two buffers (each thread sums its half,
// s = a[i] + b[i] written into both buffers, then a barrier: the same memory traffic and
// one synchronisation per call), measured alternately in the same run.
// gb_per_s is algorithm bandwidth (bytes of one buffer / seconds per all-reduce);
// ratio_to_reference = reference seconds / all-reduce seconds (1.0: as fast as the
// hand-written sum). 1K floats measures the synchronisation latency. One JSON line per size.
#include <algorithm>
#include <barrier>
#include <chrono>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/comm/local_communicator.h"
#include "chorus/core/creation.h"

namespace chorus {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kThreads = 2;
constexpr int kRounds = 7;

// Runs body(rank) `iters` times on each of kThreads threads started together; returns rank
// 0's seconds per iteration.
template <class Body>
double seconds_per_iter(int iters, Body body) {
  std::barrier start(kThreads);
  double seconds = 0;
  auto run = [&](int rank) {
    backend::cpu::set_intra_op_threads(1);
    start.arrive_and_wait();
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < iters; ++i) body(rank);
    if (rank == 0) seconds = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
  };
  std::vector<std::thread> others;
  for (int r = 1; r < kThreads; ++r) others.emplace_back(run, r);
  run(0);
  for (auto& t : others) t.join();
  return seconds;
}

// The reference: thread r sums its half of a and b into both, then waits for the other.
void reference_sum(float* a, float* b, int64_t n, int rank, std::barrier<>& done) {
  const int64_t begin = n * rank / kThreads, end = n * (rank + 1) / kThreads;
  for (int64_t i = begin; i < end; ++i) {
    const float s = a[i] + b[i];
    a[i] = s;
    b[i] = s;
  }
  done.arrive_and_wait();
}

void run_size(int64_t n) {
  std::vector<std::unique_ptr<comm::Communicator>> comms = comm::make_local_communicators(kThreads);
  // Ones double every call and reach inf after ~128 calls: inf adds at full speed (only
  // denormals are slow), so the values do not affect the timing.
  std::vector<Tensor> buffers = {ones({n}), ones({n})};
  float* a = buffers[0].data<float>();
  float* b = buffers[1].data<float>();
  std::barrier<> done(kThreads);

  auto all_reduce = [&](int rank) { comms[rank]->all_reduce(buffers[rank]); };
  auto reference = [&](int rank) { reference_sum(a, b, n, rank, done); };
  const double once = seconds_per_iter(1, all_reduce);
  const int iters = std::max(1, static_cast<int>(0.1 / std::max(once, 1e-7)));
  seconds_per_iter(iters / 4 + 1, reference);  // warm-up
  std::vector<double> comm_s, ref_s;
  for (int round = 0; round < kRounds; ++round) {
    ref_s.push_back(seconds_per_iter(iters, reference));
    comm_s.push_back(seconds_per_iter(iters, all_reduce));
  }
  const double seconds = bench::median(comm_s), ref = bench::median(ref_s);
  const double bytes = static_cast<double>(n) * sizeof(float);
  bench::emit({{"bench", "allreduce"},
               {"backend", comms[0]->backend()},
               {"participants", kThreads},
               {"floats", n},
               {"allreduce_us", seconds * 1e6},
               {"reference_us", ref * 1e6},
               {"gb_per_s", bytes / seconds / 1e9},
               {"reference_gb_per_s", bytes / ref / 1e9},
               {"ratio_to_reference", ref / seconds}});
}

}  // namespace
}  // namespace chorus

int main() {
  for (int64_t n : {int64_t{1} << 10, int64_t{1} << 20, int64_t{16} << 20, int64_t{64} << 20}) chorus::run_size(n);
  return 0;
}
