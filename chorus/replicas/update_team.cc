#include "chorus/replicas/update_team.h"

#include <immintrin.h>

#include <thread>

namespace chorus::replicas {
namespace {

// The claim word: job in bits 32-63, the job's chunk count in 16-31, the next unclaimed
// chunk in 0-15, so that a claim names its job and its bound together.
constexpr uint64_t kNextMask = 0xffff;
uint64_t chunk_count(uint64_t claim) { return (claim >> 16) & 0xffff; }

// One poll of a wait: pause instructions for the first few microseconds, then yielding
// the core, which a thread we wait for may need (more threads than cores).
void relax(int& polls) {
  if (polls < 256) {
    ++polls;
    _mm_pause();
  } else {
    std::this_thread::yield();
  }
}

}  // namespace

void UpdateTeam::work_on(uint64_t job) {
  backend::cpu::LentThreadsScope serial(nullptr);  // a chunk's own parallel_for runs here
  for (;;) {
    uint64_t claim = claim_.load(std::memory_order_acquire);
    if ((claim >> 32) != job || (claim & kNextMask) >= chunk_count(claim)) return;
    if (!claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel)) continue;
    try {
      (*fn_)(static_cast<int64_t>(claim & kNextMask));
    } catch (...) {
      std::lock_guard lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
    done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void UpdateTeam::run(int64_t chunks, const std::function<void(int64_t chunk)>& fn) {
  if (chunks > static_cast<int64_t>(kNextMask)) chunks = kNextMask;  // never: chunks <= size()
  const uint64_t job = (claim_.load(std::memory_order_relaxed) >> 32) + 1;
  fn_ = &fn;
  done_.store(0, std::memory_order_relaxed);
  error_ = nullptr;
  claim_.store(job << 32 | static_cast<uint64_t>(chunks) << 16, std::memory_order_release);  // publishes fn_
  work_on(job);
  for (int polls = 0; done_.load(std::memory_order_acquire) < chunks;) relax(polls);
  if (error_) std::rethrow_exception(error_);
}

void UpdateTeam::serve(uint64_t step) {
  backend::cpu::enable_flush_denormal();  // as on replica 0: the same bits
  uint64_t served = 0;
  for (int polls = 0; closed_step_.load(std::memory_order_acquire) < step;) {
    const uint64_t job = claim_.load(std::memory_order_acquire) >> 32;
    if (job != served) {
      work_on(job);
      served = job;
      polls = 0;
    }
    relax(polls);
  }
}

void UpdateTeam::close(uint64_t step) {
  uint64_t closed = closed_step_.load(std::memory_order_relaxed);
  while (closed < step && !closed_step_.compare_exchange_weak(closed, step, std::memory_order_acq_rel)) {
  }
}

}  // namespace chorus::replicas
