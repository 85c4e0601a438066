// TFRecordWriter: appends length-delimited, checksummed records to a new file in
// TensorFlow's TFRecord framing (what TensorBoard's event files use). Owns the file
// descriptor and a buffer of whole records; one thread at a time.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace chorus::io {

class TFRecordWriter {
 public:
  // Creates `path`, which must not exist (so two writers never interleave records in one
  // file). Throws IOError naming the path when it cannot be created.
  explicit TFRecordWriter(std::filesystem::path path);
  // Closes the file if close() was not called; a failure then is lost (call close() to see it).
  ~TFRecordWriter();
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  // Frames `record` and buffers it; the buffer goes to the file when it passes
  // kBufferBytes or on flush(). Throws IOError naming the file when a write fails.
  // REQUIRES: not closed.
  void write(std::string_view record);
  // Writes the buffered records with whole-record writes, so a crash leaves the file
  // ending at a record boundary (as long as the kernel completes each write). Throws IOError.
  void flush();
  // flush(), fsync and close. Idempotent. Throws IOError naming the file.
  void close();

  const std::filesystem::path& path() const { return path_; }
  // The bytes a record takes in the file: 8 + 4 + size + 4.
  static constexpr size_t framed_size(size_t record_size) { return record_size + kHeaderBytes + kFooterBytes; }

  static constexpr size_t kHeaderBytes = 12;   // uint64 length, uint32 masked CRC of the length
  static constexpr size_t kFooterBytes = 4;    // uint32 masked CRC of the data
  static constexpr size_t kBufferBytes = 1 << 16;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace chorus::io
