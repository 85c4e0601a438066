#include "chorus/distribute/replica_pool.h"

#include <algorithm>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/distribute/devices.h"
#include "chorus/distribute/local_communicator.h"

namespace chorus::distribute {

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
  for (int r = 0; r < size(); ++r) threads_.emplace_back([this, r] { thread_main(r); });
}

ReplicaPool::~ReplicaPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& t : threads_) t.join();
}

void ReplicaPool::thread_main(int replica) {
  backend::cpu::set_intra_op_threads(intra_op_threads_of(devices_[static_cast<size_t>(replica)]));
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    {
      std::unique_lock lock(mutex_);
      work_ready_.wait(lock, [&] { return stopping_ || (generation_ != seen && replica < active_); });
      if (stopping_) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr error;
    try {
      (*job)(replica);
    } catch (...) {
      error = std::current_exception();
      // The other replicas may be waiting for this one in a collective.
      communicator(replica).abort(fmt::format("replica {} failed", replica));
    }
    std::lock_guard lock(mutex_);
    errors_[static_cast<size_t>(replica)] = error;
    if (--remaining_ == 0) work_done_.notify_one();
  }
}

void ReplicaPool::run(int active, const std::function<void(int replica)>& fn) {
  if (active < 1 || active > size()) {
    throw_error<ValueError>("ReplicaPool::run: expected 1 to {} replicas, got {}", size(), active);
  }
  auto& group = groups_[static_cast<size_t>(active)];
  if (group.empty()) group = make_local_communicators(active);
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    active_ = active;
    remaining_ = active;
    std::fill(errors_.begin(), errors_.end(), nullptr);
    ++generation_;
  }
  work_ready_.notify_all();
  std::exception_ptr first, first_collective;
  {
    std::unique_lock lock(mutex_);
    work_done_.wait(lock, [&] { return remaining_ == 0; });
    for (const auto& e : errors_) {
      if (!e) continue;
      try {
        std::rethrow_exception(e);
      } catch (const CollectiveError&) {
        if (!first_collective) first_collective = e;
      } catch (...) {
        if (!first) first = e;
      }
    }
  }
  if (first || first_collective) {
    group.clear();  // an aborted group cannot be reused
    std::rethrow_exception(first ? first : first_collective);
  }
}

}  // namespace chorus::distribute
