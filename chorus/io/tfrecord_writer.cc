// TFRecord framing (tensorflow/core/lib/io/record_writer.h), every integer little-endian:
//
//   offset       size  field
//   0            8     uint64 length          n, the size of data
//   8            4     uint32 masked_crc32c(bytes 0..7)
//   12           n     data                   (for TensorBoard: a serialised tensorboard.Event)
//   12 + n       4     uint32 masked_crc32c(data)
//
// masked_crc32c is crc32c::mask(crc32c::value(bytes)). Records follow each other with no
// padding and the file has no header or trailer.
#include "chorus/io/tfrecord_writer.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include "chorus/core/error.h"
#include "chorus/io/crc32c.h"

namespace chorus::io {
namespace {

template <class T>
void append_little_endian(std::string& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xffu));
}

}  // namespace

TFRecordWriter::TFRecordWriter(std::filesystem::path path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_error<IOError>("TFRecordWriter: cannot create {}: {}", path_.string(), std::strerror(errno));
}

TFRecordWriter::~TFRecordWriter() {
  try {
    close();
  } catch (const Error&) {
    // Destructors do not throw; close() explicitly to see the error.
  }
}

void TFRecordWriter::write(std::string_view record) {
  if (fd_ < 0) throw_error<IOError>("TFRecordWriter: {} is closed", path_.string());
  const size_t header_at = buffer_.size();
  append_little_endian<uint64_t>(buffer_, record.size());
  const std::string_view length_bytes(buffer_.data() + header_at, 8);
  append_little_endian<uint32_t>(buffer_, crc32c::mask(crc32c::value(length_bytes)));
  buffer_.append(record);
  append_little_endian<uint32_t>(buffer_, crc32c::mask(crc32c::value(record)));
  if (buffer_.size() >= kBufferBytes) flush();
}

void TFRecordWriter::flush() {
  if (fd_ < 0 || buffer_.empty()) return;
  size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      buffer_.erase(0, done);  // what was written stays written; a retry sends the rest
      throw_error<IOError>("TFRecordWriter: cannot write to {}: {}", path_.string(), std::strerror(error));
    }
    done += static_cast<size_t>(n);
  }
  buffer_.clear();
}

void TFRecordWriter::close() {
  if (fd_ < 0) return;
  flush();
  const int fd = fd_;
  fd_ = -1;
  // fsync: after a power loss the file still holds every record written before close.
  const bool synced = ::fsync(fd) == 0 || errno == EINVAL;  // EINVAL: a file system without fsync
  const int sync_errno = errno;
  if (::close(fd) != 0) throw_error<IOError>("TFRecordWriter: cannot close {}: {}", path_.string(), std::strerror(errno));
  if (!synced) throw_error<IOError>("TFRecordWriter: cannot sync {}: {}", path_.string(), std::strerror(sync_errno));
}

}  // namespace chorus::io
