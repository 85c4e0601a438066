#include "chorus/io/safetensors_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "chorus/core/error.h"
#include "chorus/io/atomic_file.h"

namespace chorus::io {

SafetensorsWriter::SafetensorsWriter(std::filesystem::path path, std::vector<TensorEntry> tensors,
                                     const std::map<std::string, std::string>& metadata)
    : path_(std::move(path)), tensors_(std::move(tensors)) {
  const std::string header = safetensors_header(path_, tensors_, metadata);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) throw_error<IOError>("{}: cannot create: {}", path_.string(), std::strerror(errno));
  write_all(fd_, header, path_);
}

SafetensorsWriter::~SafetensorsWriter() {
  if (fd_ >= 0) ::close(fd_);  // an unfinished file: its staging directory is removed with it
}

void SafetensorsWriter::write(const Tensor& tensor) {
  if (written_ == tensors_.size()) {
    throw_error<ValueError>("{}: every one of its {} tensors was written already", path_.string(), tensors_.size());
  }
  const TensorEntry& next = tensors_[written_];
  if (!tensor.defined() || tensor.dtype() != next.dtype || tensor.shape() != next.shape) {
    throw_error<ValueError>("{}: tensor '{}' is {} {} in the header, got {}", path_.string(), next.name,
                            next.shape.to_string(), dtype_name(next.dtype),
                            tensor.defined() ? tensor.shape().to_string() + " " + std::string(dtype_name(tensor.dtype()))
                                             : std::string("an undefined tensor"));
  }
  if (!tensor.device().is_cpu()) {
    throw_error<ValueError>("{}: tensor '{}' is on {}, expected cpu", path_.string(), next.name,
                            tensor.device().to_string());
  }
  write_all(fd_, std::string_view(static_cast<const char*>(tensor.raw_data()), tensor.nbytes()), path_);
  ++written_;
}

void SafetensorsWriter::close() {
  if (written_ != tensors_.size()) {
    throw_error<ValueError>("{}: tensor '{}' was never written ({} of {} written)", path_.string(),
                            tensors_[written_].name, written_, tensors_.size());
  }
  if (::fsync(fd_) != 0) throw_error<IOError>("{}: fsync failed: {}", path_.string(), std::strerror(errno));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw_error<IOError>("{}: close failed: {}", path_.string(), std::strerror(errno));
}

}  // namespace chorus::io
