#include "chorus/replicas/replica_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/comm/local_communicator.h"
#include "chorus/core/devices.h"

namespace chorus::replicas {

ReplicaPool::ReplicaPool(std::vector<Device> devices) : devices_(std::move(devices)) {
  if (devices_.empty()) throw ValueError("ReplicaPool: expected at least one device");
  for (size_t i = 0; i < devices_.size(); ++i) {
    check_device(devices_[i]);
    for (size_t j = 0; j < i; ++j) {
      if (devices_[i] == devices_[j]) {
        throw_error<ValueError>("ReplicaPool: device {} is listed twice", devices_[i].to_string());
      }
    }
  }
  groups_.resize(devices_.size() + 1);
  errors_.resize(devices_.size());
  threads_.reserve(devices_.size());
  for (int r = 1; r < size(); ++r) threads_.emplace_back([this, r] { thread_main(r); });
}

ReplicaPool::~ReplicaPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& t : threads_) t.join();
}

namespace {

// Spins for about 50 µs (longer than a futex sleep and wake-up) until done() holds.
template <class Done>
bool spin_until(Done done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
  for (int i = 0;; ++i) {
    if (done()) return true;
    _mm_pause();
    if (i % 64 == 63 && std::chrono::steady_clock::now() >= until) return false;
  }
}

}  // namespace

void ReplicaPool::run_job(int replica) {
  std::exception_ptr error;
  try {
    (*job_)(replica);
  } catch (...) {
    error = std::current_exception();
    // The other replicas may be waiting for this one in a collective.
    communicator(replica).abort(fmt::format("replica {} failed", replica));
  }
  errors_[static_cast<size_t>(replica)] = error;
}

void ReplicaPool::thread_main(int replica) {
  backend::cpu::set_intra_op_threads(intra_op_threads_of(devices_[static_cast<size_t>(replica)]));
  uint64_t seen = 0;
  for (;;) {
    uint64_t state = seen;
    auto ready = [&] {
      state = run_state_.load(std::memory_order_acquire);
      return stopping_.load(std::memory_order_acquire) || state != seen;
    };
    if (!spin_until(ready)) {
      std::unique_lock lock(mutex_);
      work_ready_.wait(lock, ready);
    }
    if (stopping_.load(std::memory_order_acquire)) return;
    seen = state;
    if (replica >= static_cast<int>(state & 0xffff)) continue;  // not in this run
    run_job(replica);
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mutex_);
      work_done_.notify_one();
    }
  }
}

void ReplicaPool::run(int active, const std::function<void(int replica)>& fn) {
  if (active < 1 || active > size()) {
    throw_error<ValueError>("ReplicaPool::run: expected 1 to {} replicas, got {}", size(), active);
  }
  auto& group = groups_[static_cast<size_t>(active)];
  if (group.empty()) group = comm::make_local_communicators(active);
  std::fill(errors_.begin(), errors_.end(), nullptr);
  job_ = &fn;
  active_ = active;
  remaining_.store(active - 1, std::memory_order_relaxed);
  {
    std::lock_guard lock(mutex_);  // orders the store with a worker about to sleep
    const uint64_t next_run = (run_state_.load(std::memory_order_relaxed) >> 16) + 1;
    run_state_.store((next_run << 16) | static_cast<uint64_t>(active), std::memory_order_release);
  }
  work_ready_.notify_all();
  // Replica 0 runs here, with its device's share of the cores.
  const int saved_threads = backend::cpu::intra_op_threads();
  backend::cpu::set_intra_op_threads(intra_op_threads_of(devices_[0]));
  run_job(0);
  backend::cpu::set_intra_op_threads(saved_threads);
  auto done = [&] { return remaining_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(done)) {
    std::unique_lock lock(mutex_);
    work_done_.wait(lock, done);
  }
  std::exception_ptr first, first_collective;
  for (const auto& e : errors_) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const comm::CollectiveError&) {
      if (!first_collective) first_collective = e;
    } catch (...) {
      if (!first) first = e;
    }
  }
  if (first || first_collective) {
    group.clear();  // an aborted group cannot be reused
    std::rethrow_exception(first ? first : first_collective);
  }
}

std::shared_ptr<ReplicaPool> replica_pool_of(const distribution::Distribution& distribution) {
  return distribution.replica_pool([&] { return std::make_shared<ReplicaPool>(distribution.local_devices()); });
}

}  // namespace chorus::replicas
