// Intra-op parallelism for CPU kernels: one OpenMP runtime, a per-thread thread budget
// (a replica thread sets its share of the cores so replicas never oversubscribe), and
// flush-to-zero for denormals on every compute thread. Thread-safe: all state is per thread.
#pragma once

#include <algorithm>
#include <cstdint>

#include <omp.h>

namespace chorus::backend::cpu {

// Threads that kernels started from the calling thread may use. Defaults to OpenMP's
// maximum (the machine's cores unless OMP_NUM_THREADS says otherwise).
int intra_op_threads();
// Sets the calling thread's budget (>= 1) for itself and the OpenMP pool it drives.
void set_intra_op_threads(int threads);

// Sets FTZ and DAZ in the calling thread's MXCSR: denormal floats are several times
// slower on x86, and TensorFlow flushes them too. Called by every parallel region.
void enable_flush_denormal();
// Whether FTZ and DAZ are set on the calling thread.
bool flush_denormal_enabled();

// Runs fn(begin, end) over disjoint chunks covering [0, n). Parallel across up to
// intra_op_threads() threads when n >= 2 * grain; chunks are contiguous and each thread
// gets one, so results are the same for any thread count when fn's chunks are independent.
template <class Fn>
void parallel_for(int64_t n, int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  const int64_t max_by_work = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  const int threads = static_cast<int>(std::min<int64_t>(intra_op_threads(), max_by_work));
  if (threads <= 1 || omp_in_parallel()) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    enable_flush_denormal();
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = n * t / nt, end = n * (t + 1) / nt;
    if (begin < end) fn(begin, end);
  }
}

}  // namespace chorus::backend::cpu
