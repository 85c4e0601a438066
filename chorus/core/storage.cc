// Host allocation, with two caches in front of the C allocator:
// - Freed blocks of 1 MiB and more go to a process-wide, size-keyed cache instead of back
//   to the system: glibc serves such sizes with fresh mmaps whose first touch page-faults,
//   which would make a 64 MB elementwise op several times slower than its memory traffic.
//   It is behind a mutex (a large block is worth far more than one lock) and bounded by
//   kMaxCachedBytes.
// - Freed blocks of 1 KiB up to 1 MiB go to a cache of the freeing thread, by exact size: a
//   training step allocates the same activation and gradient sizes every time, and each
//   glibc request of this size first consolidates every small chunk freed since the last
//   one (malloc_consolidate): the cache took a MovieLens retrieval step from 38.8 to
//   36.3 µs. No lock; bounded per thread by kMaxThreadCachedBytes and kMaxBlocksPerSize.
#include "chorus/core/storage.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "chorus/core/error.h"
#include "chorus/core/trace_observer.h"

namespace chorus {
namespace {

constexpr size_t kCacheMinBytes = size_t{1} << 20;
constexpr size_t kMaxCachedBytes = size_t{2} << 30;
constexpr size_t kThreadCacheMinBytes = size_t{1} << 10;
constexpr size_t kMaxThreadCachedBytes = size_t{64} << 20;
constexpr size_t kMaxBlocksPerSize = 16;
constexpr size_t kHugePageBytes = size_t{2} << 20;
constexpr size_t kHugePageMinBytes = size_t{8} << 20;

class HostBlockCache {
 public:
  // Returns a cached block of at least `nbytes` and at most twice that, or nullptr.
  void* take(size_t nbytes, size_t* capacity) {
    std::lock_guard lock(mutex_);
    auto it = blocks_.lower_bound(nbytes);
    if (it == blocks_.end() || it->first > 2 * nbytes) return nullptr;
    *capacity = it->first;
    void* data = it->second;
    cached_bytes_ -= it->first;
    blocks_.erase(it);
    return data;
  }

  // Keeps `data` for reuse; frees it when the cache is full.
  void give(void* data, size_t capacity) {
    {
      std::lock_guard lock(mutex_);
      if (cached_bytes_ + capacity <= kMaxCachedBytes) {
        blocks_.emplace(capacity, data);
        cached_bytes_ += capacity;
        return;
      }
    }
    std::free(data);
  }

  size_t cached_bytes() {
    std::lock_guard lock(mutex_);
    return cached_bytes_;
  }

  void release() {
    std::lock_guard lock(mutex_);
    for (auto& [size, data] : blocks_) std::free(data);
    blocks_.clear();
    cached_bytes_ = 0;
  }

  ~HostBlockCache() { release(); }

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> blocks_;
  size_t cached_bytes_ = 0;
};

// The calling thread's blocks of kThreadCacheMinBytes to kCacheMinBytes, by capacity.
class ThreadBlockCache {
 public:
  void* take(size_t capacity) {
    auto it = blocks_.find(capacity);
    if (it == blocks_.end() || it->second.empty()) return nullptr;
    void* data = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= capacity;
    return data;
  }

  // Keeps `data` for reuse; frees it when this size or the cache is full.
  void give(void* data, size_t capacity) {
    std::vector<void*>& same = blocks_[capacity];
    if (same.size() >= kMaxBlocksPerSize || cached_bytes_ + capacity > kMaxThreadCachedBytes) {
      std::free(data);
      return;
    }
    same.push_back(data);
    cached_bytes_ += capacity;
  }

  size_t cached_bytes() const { return cached_bytes_; }

  void release() {
    for (auto& [capacity, same] : blocks_) {
      for (void* data : same) std::free(data);
    }
    blocks_.clear();
    cached_bytes_ = 0;
  }

  ~ThreadBlockCache() {
    release();
    alive_ = false;
  }

  // nullptr once the thread's cache is destroyed (storages freed later by thread-exit or
  // static destructors go straight back to the C allocator).
  static ThreadBlockCache* current() {
    thread_local ThreadBlockCache cache;
    return alive_ ? &cache : nullptr;
  }

 private:
  static thread_local bool alive_;
  std::unordered_map<size_t, std::vector<void*>> blocks_;
  size_t cached_bytes_ = 0;
};

thread_local bool ThreadBlockCache::alive_ = true;

bool thread_cached(size_t capacity) { return capacity >= kThreadCacheMinBytes && capacity < kCacheMinBytes; }

HostBlockCache& block_cache() {
  static HostBlockCache* cache = new HostBlockCache;  // never destroyed: storages may outlive statics
  return *cache;
}

size_t round_up(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// A cached block's size: up to 1/16 more than asked. A tensor whose size moves a little
// from step to step (BERT's masked rows times a 33,282-word vocabulary) then finds the
// block an earlier step freed instead of first-touching a fresh one every time its
// size sets a new high.
size_t cached_capacity(size_t capacity) {
  const size_t top = size_t{1} << (63 - __builtin_clzll(capacity));
  return round_up(capacity, top / 16);
}

// A block from the C allocator. One of kHugePageMinBytes or more is aligned to, and
// rounded up to, 2 MiB huge pages and advised to use them (MADV_HUGEPAGE; transparent
// huge pages are "madvise" on Debian's kernels): its first touch then faults once per
// 2 MiB instead of once per 4 KiB. On a VM a fault costs microseconds: decoding MNIST's
// 47 MB of training images spent more time faulting than inflating. Grows *capacity to
// the rounded size.
void* allocate_fresh(size_t& capacity) {
  if (capacity < kHugePageMinBytes) return std::aligned_alloc(kStorageAlignment, capacity);
  capacity = round_up(capacity, kHugePageBytes);
  void* data = std::aligned_alloc(kHugePageBytes, capacity);
  if (data != nullptr) ::madvise(data, capacity, MADV_HUGEPAGE);  // advice: ignored where THP is off
  return data;
}

}  // namespace

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  if (!device.is_cpu()) {
    throw_error("Storage: device {} is not available in this build", device.to_string());
  }
  size_t capacity = round_up(nbytes == 0 ? kStorageAlignment : nbytes, kStorageAlignment);
  void* data = nullptr;
  if (capacity >= kCacheMinBytes) {
    capacity = cached_capacity(capacity);
    data = block_cache().take(capacity, &capacity);
  } else if (thread_cached(capacity)) {
    if (ThreadBlockCache* cache = ThreadBlockCache::current()) data = cache->take(capacity);
  }
  if (data == nullptr) data = allocate_fresh(capacity);
  if (data == nullptr) throw_error("Storage: out of memory allocating {} bytes", capacity);
  std::shared_ptr<Storage> storage(new Storage(data, nbytes, capacity, device));
  if (TraceObserver* observer = trace_observer()) observer->allocated(*storage);
  return storage;
}

std::shared_ptr<Storage> Storage::allocate_strings(size_t count, Device device) {
  std::shared_ptr<Storage> storage = allocate(count * sizeof(std::string), device);
  auto* strings = static_cast<std::string*>(storage->data_);
  for (size_t i = 0; i < count; ++i) new (strings + i) std::string();  // noexcept: empty strings
  storage->strings_ = count;
  return storage;
}

Storage::~Storage() {
  auto* strings = static_cast<std::string*>(data_);
  for (size_t i = 0; i < strings_; ++i) strings[i].~basic_string();
  if (capacity_ >= kCacheMinBytes) {
    block_cache().give(data_, capacity_);
    return;
  }
  ThreadBlockCache* cache = thread_cached(capacity_) ? ThreadBlockCache::current() : nullptr;
  if (cache != nullptr) {
    cache->give(data_, capacity_);
  } else {
    std::free(data_);
  }
}

size_t cached_host_bytes() { return block_cache().cached_bytes(); }
size_t thread_cached_host_bytes() {
  const ThreadBlockCache* cache = ThreadBlockCache::current();
  return cache != nullptr ? cache->cached_bytes() : 0;
}

void release_cached_host_memory() {
  block_cache().release();
  if (ThreadBlockCache* cache = ThreadBlockCache::current()) cache->release();
}

}  // namespace chorus
