#include "chorus/data/line_reader.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "chorus/core/error.h"

namespace chorus::data {
namespace {

constexpr size_t kBlockSize = 256 * 1024;

[[noreturn]] void throw_open_error(const std::string& path, int error) {
  throw_error<IOError>("{}: cannot open: {}", path, std::strerror(error));
}

}  // namespace

std::string read_file(const std::string& path) {
  std::unique_ptr<std::FILE, decltype(&std::fclose)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw_open_error(path, errno);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw_error<IOError>("{}: cannot open: Is a directory", path);
  std::string content;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) content.reserve(static_cast<size_t>(size));
  char block[64 * 1024];
  while (true) {
    const size_t got = std::fread(block, 1, sizeof block, file.get());
    content.append(block, got);
    if (got < sizeof block) break;
  }
  if (std::ferror(file.get())) throw_error<IOError>("{}: read error at byte {}", path, content.size());
  return content;
}

void check_readable(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw_error<IOError>("{}: cannot open: Is a directory", path);
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) throw_open_error(path, errno);
  std::fclose(file);
}

LineReader::LineReader(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "rb")) {
  if (!file_) throw_open_error(path, errno);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw_error<IOError>("{}: cannot open: Is a directory", path);
}

bool LineReader::refill() {
  if (eof_) return false;
  buffer_.erase(0, begin_);
  begin_ = 0;
  const size_t old_size = buffer_.size();
  buffer_.resize(old_size + kBlockSize);
  const size_t got = std::fread(buffer_.data() + old_size, 1, kBlockSize, file_.get());
  buffer_.resize(old_size + got);
  if (got < kBlockSize) {
    if (std::ferror(file_.get())) throw_error<IOError>("{}: read error after line {}", path_, line_number_);
    eof_ = true;
  }
  return got > 0;
}

std::optional<std::string_view> LineReader::next() {
  size_t searched = begin_;  // bytes before this hold no '\n'
  while (true) {
    const char* start = buffer_.data() + searched;
    const void* newline = std::memchr(start, '\n', buffer_.size() - searched);
    if (newline != nullptr) {
      const size_t end = static_cast<size_t>(static_cast<const char*>(newline) - buffer_.data());
      std::string_view line(buffer_.data() + begin_, end - begin_);
      begin_ = end + 1;
      ++line_number_;
      return strip_cr(line);
    }
    searched = buffer_.size() - begin_;  // offsets shift when refill drops consumed bytes
    if (!refill()) break;
    searched += begin_;
  }
  if (begin_ == buffer_.size()) return std::nullopt;
  std::string_view last(buffer_.data() + begin_, buffer_.size() - begin_);
  begin_ = buffer_.size();
  ++line_number_;
  return strip_cr(last);
}

}  // namespace chorus::data
