#include "chorus/backend/cpu/parallel.h"

#include <xmmintrin.h>

namespace chorus::backend::cpu {
namespace {

constexpr unsigned kFlushToZero = 0x8000;      // MXCSR.FTZ
constexpr unsigned kDenormalsAreZero = 0x0040;  // MXCSR.DAZ

// The CPU pool's per-thread settings: a replica's share of the cores, and the threads an
// update team lends it.
thread_local int t_threads = 0;  // 0: not set, use OpenMP's default
thread_local LentThreads* t_lent = nullptr;

// Flushes denormals on the thread that loads the library, so that single-threaded code
// and threads it later creates (which inherit MXCSR) start with FTZ/DAZ on.
[[maybe_unused]] const bool g_main_thread_flushes = [] {
  enable_flush_denormal();
  return true;
}();

}  // namespace

int intra_op_threads() { return t_threads > 0 ? t_threads : omp_get_max_threads(); }

void set_intra_op_threads(int threads) {
  t_threads = std::max(1, threads);
  omp_set_num_threads(t_threads);
}

IntraOpThreadsScope::IntraOpThreadsScope(int threads)
    : saved_threads_(t_threads), saved_omp_threads_(omp_get_max_threads()) {
  set_intra_op_threads(threads);
}

IntraOpThreadsScope::~IntraOpThreadsScope() {
  t_threads = saved_threads_;
  omp_set_num_threads(saved_omp_threads_);
}

LentThreads* lent_threads() { return t_lent; }

LentThreadsScope::LentThreadsScope(LentThreads* threads) : saved_(t_lent) { t_lent = threads; }
LentThreadsScope::~LentThreadsScope() { t_lent = saved_; }

void enable_flush_denormal() { _mm_setcsr(_mm_getcsr() | kFlushToZero | kDenormalsAreZero); }

bool flush_denormal_enabled() {
  const unsigned mask = kFlushToZero | kDenormalsAreZero;
  return (_mm_getcsr() & mask) == mask;
}

}  // namespace chorus::backend::cpu
