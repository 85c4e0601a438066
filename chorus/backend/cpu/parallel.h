// Intra-op parallelism for CPU kernels: one OpenMP runtime, a per-thread thread budget
// (a replica thread sets its share of the cores so replicas never oversubscribe), and
// flush-to-zero for denormals on every compute thread. Thread-safe: all state is per thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

#include <omp.h>

namespace chorus::backend::cpu {

// Threads that kernels started from the calling thread may use. Defaults to OpenMP's
// maximum (the machine's cores unless OMP_NUM_THREADS says otherwise).
int intra_op_threads();
// Sets the calling thread's budget (>= 1) for itself and the OpenMP pool it drives.
void set_intra_op_threads(int threads);

// Sets the calling thread's budget to `threads` for the scope's life, then restores what
// it was (set or OpenMP's default). Data pipelines run map functions under a budget of 1.
class IntraOpThreadsScope {
 public:
  explicit IntraOpThreadsScope(int threads);
  ~IntraOpThreadsScope();
  IntraOpThreadsScope(const IntraOpThreadsScope&) = delete;
  IntraOpThreadsScope& operator=(const IntraOpThreadsScope&) = delete;

 private:
  int saved_threads_;      // the budget set before, 0 when none was
  int saved_omp_threads_;  // OpenMP's thread count before
};

// Sets FTZ and DAZ in the calling thread's MXCSR: denormal floats are several times
// slower on x86, and TensorFlow flushes them too. Called by every parallel region.
void enable_flush_denormal();
// Whether FTZ and DAZ are set on the calling thread.
bool flush_denormal_enabled();

// Threads lent to the calling thread's kernels for a while, instead of OpenMP's: the
// data-parallel replicas that would otherwise wait while replica 0 runs the optimizer
// update (distribute/update_team.h). Installed on a thread by LentThreadsScope.
class LentThreads {
 public:
  virtual ~LentThreads() = default;
  // Threads that may take chunks, the caller included.
  virtual int size() const = 0;
  // Runs fn(c) once for every c in [0, chunks), on the caller and on whichever lent
  // threads are free, and returns when all have run. Rethrows an exception of fn.
  virtual void run(int64_t chunks, const std::function<void(int64_t chunk)>& fn) = 0;
};

// The calling thread's lent threads, or nullptr (also inside a run of them: nested
// parallel_for calls run serially).
LentThreads* lent_threads();

class LentThreadsScope {
 public:
  explicit LentThreadsScope(LentThreads* threads);
  ~LentThreadsScope();
  LentThreadsScope(const LentThreadsScope&) = delete;
  LentThreadsScope& operator=(const LentThreadsScope&) = delete;

 private:
  LentThreads* saved_;
};

// Runs fn(begin, end) over disjoint chunks covering [0, n). Parallel across up to
// intra_op_threads() threads (or the lent threads, when some are) when n >= 2 * grain;
// chunks are contiguous and each thread gets one, so results are the same for any
// thread count when fn's chunks are independent.
template <class Fn>
void parallel_for(int64_t n, int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  const int64_t max_by_work = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  if (LentThreads* lent = lent_threads(); lent != nullptr && max_by_work > 1) {
    const int64_t chunks = std::min<int64_t>(lent->size(), max_by_work);
    lent->run(chunks, [&](int64_t c) { fn(n * c / chunks, n * (c + 1) / chunks); });
    return;
  }
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
