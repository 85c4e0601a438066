// A safetensors file read in place: its header checked as load_safetensors checks it and
// its data mapped (mmap, read-only), so that a reader touches only the byte ranges it
// copies — a sharded checkpoint's device reads its own blocks of each tensor, nothing
// else. Owns the mapping; reading from many threads is safe.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

#include "chorus/io/safetensors.h"

namespace chorus::io {

class MappedSafetensors {
 public:
  // Throws IOError naming the file when it is missing, truncated or its header invalid.
  explicit MappedSafetensors(std::filesystem::path path);
  ~MappedSafetensors();
  MappedSafetensors(const MappedSafetensors&) = delete;
  MappedSafetensors& operator=(const MappedSafetensors&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  // The bytes of `tensor` (one of header().tensors), row-major; no alignment promised.
  // A BOOL tensor's bytes are checked first (check_bool_bytes).
  std::span<const std::byte> bytes(const TensorEntry& tensor) const;
  // Drops the pages of `tensor` from this process's memory (they were only copied out).
  void release(const TensorEntry& tensor) const;

 private:
  std::filesystem::path path_;
  SafetensorsHeader header_;
  const std::byte* map_ = nullptr;
  size_t map_size_ = 0;
};

}  // namespace chorus::io
