#include "chorus/io/mapped_safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "chorus/core/error.h"

namespace chorus::io {

MappedSafetensors::MappedSafetensors(std::filesystem::path path)
    : path_(std::move(path)), header_(read_safetensors_header(path_)) {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_error<IOError>("{}: cannot open: {}", path_.string(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw_error<IOError>("{}: cannot stat: {}", path_.string(), std::strerror(errno));
  }
  // The file may have changed since its header was checked: the data must still fit.
  const uint64_t data_end =
      header_.data_start + (header_.tensors.empty() ? 0 : header_.tensors.back().end);
  if (static_cast<uint64_t>(st.st_size) < data_end) {
    ::close(fd);
    throw_error<IOError>("{}: {} bytes, but its tensors end at byte {} (truncated?)", path_.string(), st.st_size,
                         data_end);
  }
  map_size_ = static_cast<size_t>(st.st_size);
  if (map_size_ > 0) {
    void* map = ::mmap(nullptr, map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw_error<IOError>("{}: cannot map: {}", path_.string(), std::strerror(err));
    }
    map_ = static_cast<const std::byte*>(map);
  }
  ::close(fd);  // the mapping keeps the file
}

MappedSafetensors::~MappedSafetensors() {
  if (map_ != nullptr) ::munmap(const_cast<std::byte*>(map_), map_size_);
}

std::span<const std::byte> MappedSafetensors::bytes(const TensorEntry& tensor) const {
  const std::span<const std::byte> out(map_ + header_.data_start + tensor.begin, tensor.end - tensor.begin);
  if (tensor.dtype == kBool) check_bool_bytes(path_, tensor, out);
  return out;
}

void MappedSafetensors::release(const TensorEntry& tensor) const {
  // Whole pages inside the tensor's bytes only: a page it shares with a neighbour stays.
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(map_ + header_.data_start + tensor.begin);
  const auto end = reinterpret_cast<uintptr_t>(map_ + header_.data_start + tensor.end);
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace chorus::io
