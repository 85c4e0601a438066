// Writes a safetensors file one tensor at a time, so that a writer needs only the tensor
// it is writing in memory (a sharded checkpoint's rank gathers one tensor, writes it,
// drops it). Not atomic on its own: it writes inside an AtomicDirectory's staging
// directory, which is swapped in whole. Owns its file descriptor; not thread-safe.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "chorus/io/safetensors.h"

namespace chorus::io {

class SafetensorsWriter {
 public:
  // Creates `path` (replacing a file there) and writes the header for `tensors`, which
  // write() must then give in this order. Throws ValueError for a name or dtype
  // save_safetensors refuses, IOError naming the file when it cannot be written.
  SafetensorsWriter(std::filesystem::path path, std::vector<TensorEntry> tensors,
                    const std::map<std::string, std::string>& metadata = {});
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // Appends the next tensor's bytes. Throws ValueError naming the file and tensor when
  // `tensor` is not the next one's dtype and shape, or when every tensor was written.
  void write(const Tensor& tensor);
  // Flushes the file to disk (fsync) and closes it. Throws ValueError naming the first
  // tensor not written, IOError when the flush fails.
  void close();

 private:
  std::filesystem::path path_;
  std::vector<TensorEntry> tensors_;
  size_t written_ = 0;
  int fd_ = -1;
};

}  // namespace chorus::io
