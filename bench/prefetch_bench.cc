// prefetch overlap: a producer that busy-works P microseconds per element and a consumer
// that busy-works T per element (P <= T, on different threads, so the overlap can be
// real on this 2-core machine). Without prefetch an epoch costs about n (P + T); with
// prefetch(2) about n max(P, T). Reports, per (P, T), the median epoch times of both,
// sampled alternately in the same run, and overlap = (without - with) / (n P): 1.0
// means the producer is fully hidden. One JSON line per (P, T, buffer size): prefetch(2)
// as tutorials use it, and prefetch(8) (kAutotune), whose producer is woken once per 4
// elements rather than per element (each wake-up costs microseconds on a VM).
#include <chrono>
#include <vector>

#include "bench/bench_util.h"
#include "chorus/core/creation.h"
#include "chorus/data/dataset.h"

namespace chorus {
namespace {

using Clock = std::chrono::steady_clock;

// Spins for `us` microseconds: busy work that needs a core (sleeping would overlap
// even on one core).
void spin(double us) {
  const auto until = Clock::now() + std::chrono::duration<double, std::micro>(us);
  while (Clock::now() < until) {
  }
}

data::Dataset producer(int64_t n, double producer_us) {
  return data::Dataset::from_generator(
      [n, producer_us](int64_t) -> data::Dataset::Generator {
        return [n, producer_us, i = int64_t{0}]() mutable -> std::optional<Tree> {
          if (i == n) return std::nullopt;
          spin(producer_us);
          return Tree(from_values<int64_t>({i++}, Shape{}));
        };
      },
      n);
}

double epoch_seconds(const data::Dataset& ds, double consumer_us) {
  const auto start = Clock::now();
  for (auto it = ds.iterator(); auto e = it.next();) spin(consumer_us);
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void measure(double producer_us, double consumer_us, int64_t n, int64_t buffer_size = 2, int repeats = 5) {
  const data::Dataset plain = producer(n, producer_us);
  const data::Dataset prefetched = plain.prefetch(buffer_size);
  std::vector<double> without, with;
  epoch_seconds(prefetched, consumer_us);  // warm-up: thread start, page faults
  for (int r = 0; r < repeats; ++r) {  // alternate so drift hits both alike
    without.push_back(epoch_seconds(plain, consumer_us));
    with.push_back(epoch_seconds(prefetched, consumer_us));
  }
  const double t_without = bench::median(without), t_with = bench::median(with);
  bench::emit({{"bench", "prefetch"},
               {"producer_us", producer_us},
               {"consumer_us", consumer_us},
               {"elements", n},
               {"buffer_size", buffer_size},
               {"seconds_without", t_without},
               {"seconds_with", t_with},
               {"ideal_seconds_with", n * std::max(producer_us, consumer_us) * 1e-6},
               {"overlap", (t_without - t_with) / (n * producer_us * 1e-6)}});
}

}  // namespace
}  // namespace chorus

int main() {
  for (int64_t buffer_size : {2, 8}) {
    chorus::measure(/*producer_us=*/20, /*consumer_us=*/50, 4000, buffer_size);
    chorus::measure(50, 100, 2000, buffer_size);
    chorus::measure(100, 100, 2000, buffer_size);
    chorus::measure(500, 1000, 300, buffer_size);
  }
  return 0;
}
