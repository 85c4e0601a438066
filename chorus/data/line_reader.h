// File reading shared by the dataset readers: a whole file into memory (the readers
// parse from one buffer, which is what makes them fast), and LineReader, a buffered
// line-at-a-time reader for files too large to hold (text_line_dataset). A LineReader
// belongs to one thread; read_file is thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace chorus::data {

// The whole content of the file at `path`. Throws IOError naming the file and the
// system's reason when it cannot be opened or read.
std::string read_file(const std::string& path);

// Throws IOError ("<path>: cannot open: No such file or directory") unless `path` names
// a readable regular file. For readers that fail early, when a dataset is made.
void check_readable(const std::string& path);

// `line` without a trailing '\r' (the rest of a "\r\n" ending).
inline std::string_view strip_cr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// Reads a text file one line at a time through a 256 KiB buffer. Lines end at '\n'
// (a "\r\n" ending loses its '\r' too); a last line without '\n' is still a line.
// Lines may be longer than the buffer.
class LineReader {
 public:
  // Opens `path`. Throws IOError if it cannot be opened.
  explicit LineReader(const std::string& path);

  // The next line without its ending, or nullopt at the end of the file. The view stays
  // valid until the next call. Throws IOError on a read error.
  std::optional<std::string_view> next();
  // The 1-based number of the line that next() returned last (0 before the first).
  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }

 private:
  struct FileCloser {
    void operator()(std::FILE* file) const { std::fclose(file); }
  };
  // Appends up to a buffer's worth of the file after the unread bytes; false at the end.
  bool refill();

  std::string path_;
  std::unique_ptr<std::FILE, FileCloser> file_;
  std::string buffer_;  // bytes [begin_, buffer_.size()) are unread
  size_t begin_ = 0;
  bool eof_ = false;
  int64_t line_number_ = 0;
};

}  // namespace chorus::data
