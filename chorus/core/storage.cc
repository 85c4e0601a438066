// Host allocation. Small blocks come from the C allocator. Freed blocks of 1 MiB and more
// go to a size-keyed cache instead of back to the system: glibc serves such sizes with
// fresh mmaps whose first touch page-faults, which would make a 64 MB elementwise op
// several times slower than its memory traffic. The cache is process-wide behind a mutex
// (a large block is worth far more than one lock) and bounded by kMaxCachedBytes.
#include "chorus/core/storage.h"

#include <cstdlib>
#include <map>
#include <mutex>

#include "chorus/core/error.h"

namespace chorus {
namespace {

constexpr size_t kCacheMinBytes = size_t{1} << 20;
constexpr size_t kMaxCachedBytes = size_t{2} << 30;

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

HostBlockCache& block_cache() {
  static HostBlockCache* cache = new HostBlockCache;  // never destroyed: storages may outlive statics
  return *cache;
}

size_t round_up(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

}  // namespace

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  if (!device.is_cpu()) {
    throw_error("Storage: device {} is not available in this build", device.to_string());
  }
  size_t capacity = round_up(nbytes == 0 ? kStorageAlignment : nbytes, kStorageAlignment);
  void* data = nullptr;
  if (capacity >= kCacheMinBytes) data = block_cache().take(capacity, &capacity);
  if (data == nullptr) data = std::aligned_alloc(kStorageAlignment, capacity);
  if (data == nullptr) throw_error("Storage: out of memory allocating {} bytes", capacity);
  return std::shared_ptr<Storage>(new Storage(data, nbytes, capacity, device));
}

Storage::~Storage() {
  if (capacity_ >= kCacheMinBytes) {
    block_cache().give(data_, capacity_);
  } else {
    std::free(data_);
  }
}

size_t cached_host_bytes() { return block_cache().cached_bytes(); }
void release_cached_host_memory() { block_cache().release(); }

}  // namespace chorus
