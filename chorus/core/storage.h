// Storage: one 64-byte-aligned buffer on a device, shared by every tensor that views it
// (owned through shared_ptr; freed when the last view goes). A string storage also owns
// the std::string objects in its buffer and destroys them. The data itself is not
// synchronised: concurrent writers to one storage must coordinate themselves.
#pragma once

#include <cstddef>
#include <memory>

#include "chorus/core/device.h"

namespace chorus {

inline constexpr size_t kStorageAlignment = 64;

class Storage {
 public:
  // Allocates `nbytes` (uninitialised) on `device`. Throws Error if the device is not
  // available or memory runs out.
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device);
  // Allocates `count` empty std::string objects (the elements of a kString tensor); the
  // storage destroys them when it is freed. CPU only.
  static std::shared_ptr<Storage> allocate_strings(size_t count, Device device);

  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  Storage(void* data, size_t nbytes, size_t capacity, Device device)
      : data_(data), nbytes_(nbytes), capacity_(capacity), device_(device) {}

  void* data_;
  size_t nbytes_;
  size_t capacity_;  // bytes actually reserved; >= nbytes_ when a cached block is reused
  size_t strings_ = 0;  // std::string objects constructed at data_ (string storages only)
  Device device_;
};

// Bytes the host allocator keeps in its cache of freed large blocks (for tests and tuning).
size_t cached_host_bytes();
// Bytes the calling thread's cache of freed mid-size blocks (1 KiB to 1 MiB) keeps.
size_t thread_cached_host_bytes();
// Returns every cached block to the system: the large ones and the calling thread's
// mid-size ones (1 KiB to 1 MiB; other threads keep theirs until they exit).
void release_cached_host_memory();

}  // namespace chorus
