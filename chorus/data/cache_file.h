// The on-disk format of Dataset::cache(path): a writer that records one pass into a
// temporary file and renames it into place when the pass completes, and a reader that
// validates a finished file and yields its elements. Internal to chorus/data; each
// object belongs to one thread. The byte layout is documented in cache_file.cc.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "chorus/core/tree.h"

namespace chorus::data {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

class CacheFileWriter {
 public:
  // Creates `path`'s directory if needed and a uniquely named temporary file beside
  // `path`. `pipeline` names the cached pipeline; `epoch` the pass being recorded.
  // Throws IOError.
  CacheFileWriter(std::string path, const std::string& pipeline, int64_t epoch);
  // Removes the temporary file unless commit() succeeded: a partial pass never becomes a cache.
  ~CacheFileWriter();
  CacheFileWriter(const CacheFileWriter&) = delete;
  CacheFileWriter& operator=(const CacheFileWriter&) = delete;

  // Appends one element. Throws IOError (disk full, ...).
  void write(const Tree& element);
  // Writes the trailer, flushes and fsyncs, and renames the file to `path` (atomically
  // replacing any file there). Throws IOError.
  void commit();

 private:
  void put(const void* data, size_t size);
  void put_tree(const Tree& tree);

  std::string path_, temp_path_;
  FilePtr file_;  // null once committed
  int64_t count_ = 0;
};

class CacheFileReader {
 public:
  // Opens a finished cache file and checks its header and trailer; throws IOError naming
  // the file and byte offset for a truncated or corrupt one, ValueError if it holds
  // another pipeline's elements.
  CacheFileReader(std::string path, const std::string& pipeline);
  CacheFileReader(const CacheFileReader&) = delete;
  CacheFileReader& operator=(const CacheFileReader&) = delete;

  // The next element, or nullopt after the last. Throws IOError on corrupt data.
  std::optional<Tree> next();
  // Continues from element `index` at byte `offset` (values index() and offset() had).
  // Throws ValueError if they are out of range.
  void seek(int64_t index, uint64_t offset);

  int64_t index() const { return index_; }
  uint64_t offset() const { return offset_; }
  int64_t count() const { return count_; }
  // The pass the file was recorded from.
  int64_t epoch() const { return epoch_; }

 private:
  void get(void* data, size_t size, const char* what);
  template <class T> T get_value(const char* what) {
    T value;
    get(&value, sizeof value, what);
    return value;
  }
  Tree get_tree(int depth);
  // Reads the elements of string tensor `t` (fresh, of its final shape).
  void get_strings(const Tensor& t);
  [[noreturn]] void corrupt(uint64_t at, const std::string& what) const;

  std::string path_;
  FilePtr file_;
  uint64_t offset_ = 0;         // of the next byte to read
  uint64_t elements_end_ = 0;   // where the trailer starts
  uint64_t elements_begin_ = 0;
  int64_t index_ = 0;
  int64_t count_ = 0;
  int64_t epoch_ = 0;
  uint32_t version_ = 0;  // of the file format: strings need version 2
};

}  // namespace chorus::data
