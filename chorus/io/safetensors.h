// Reading and writing tensors in the safetensors layout (8-byte little-endian header
// length, a JSON header of {name: {dtype, shape, data_offsets}} plus "__metadata__",
// then the raw little-endian data), readable by any safetensors reader. Files are
// written atomically (write_file_atomically). Free functions; thread-safe.
#pragma once

#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "chorus/core/tensor.h"

namespace chorus::io {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct SafetensorsContents {
  NamedTensors tensors;                         // in file order (sorted by data offset)
  std::map<std::string, std::string> metadata;  // the "__metadata__" entry
};

// Writes `tensors` (names unique; dtypes F32, BF16, I32, I64, BOOL) and `metadata`.
// Throws ValueError on a duplicate name, IOError naming the file when it cannot be written.
void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// The bytes save_safetensors would write to `path` (which names it in errors), for a
// caller that writes them itself (into a directory committed atomically as a whole).
std::string safetensors_bytes(const std::filesystem::path& path, const NamedTensors& tensors,
                              const std::map<std::string, std::string>& metadata = {});

// A tensor's name, dtype and shape, and where its bytes lie in a file's data buffer
// ([begin, end), relative to the buffer's start; unused when writing).
struct TensorEntry {
  std::string name;
  DType dtype = kFloat32;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

// The header a file holding `tensors` in this order starts with: the 8-byte length, then
// the JSON, padded to a multiple of 8 bytes. Throws ValueError as save_safetensors does.
std::string safetensors_header(const std::filesystem::path& path, const std::vector<TensorEntry>& tensors,
                               const std::map<std::string, std::string>& metadata = {});

// A file's header, checked as load_safetensors checks it, without reading the data.
struct SafetensorsHeader {
  std::vector<TensorEntry> tensors;  // sorted by data offset
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // the data buffer's first byte in the file
};
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path);

// A byte other than 0 or 1 in a BOOL tensor would be undefined behaviour to read as bool:
// throws IOError naming the file, the tensor and the first such element.
void check_bool_bytes(const std::filesystem::path& path, const TensorEntry& entry, std::span<const std::byte> bytes);

// Reads a whole file. Never executes or trusts anything in it: a truncated file, a
// header that is not JSON, offsets outside the data or overlapping, an unknown dtype or a
// shape that does not match its byte count is an IOError naming the file and the tensor.
SafetensorsContents load_safetensors(const std::filesystem::path& path);

}  // namespace chorus::io
