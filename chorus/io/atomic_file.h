// Atomic replacement of files and directories: the new content is written under a
// temporary name beside the target, flushed (fsync), then renamed over it, so a crash
// at any point leaves either the old or the new version, never a mix. Thread-safe for
// distinct targets.
#pragma once

#include <filesystem>
#include <string_view>

namespace chorus::io {

// Replaces `path` with `bytes`. Throws IOError naming the path on failure.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// Reads a whole file. Throws IOError naming the path.
std::string read_file(const std::filesystem::path& path);

// Builds a directory under a temporary name; commit() swaps it in for `path` (an old
// directory at `path` is swapped out in one renameat2(RENAME_EXCHANGE), or renamed aside
// where the file system cannot, and removed after the swap). Destroying an
// uncommitted AtomicDirectory removes the temporary. Not thread-safe.
class AtomicDirectory {
 public:
  explicit AtomicDirectory(std::filesystem::path path);
  ~AtomicDirectory();
  AtomicDirectory(const AtomicDirectory&) = delete;
  AtomicDirectory& operator=(const AtomicDirectory&) = delete;

  // Where to write the directory's files before commit().
  const std::filesystem::path& staging() const { return staging_; }
  // Flushes the files and the directory, then swaps. Throws IOError.
  void commit();

 private:
  std::filesystem::path path_;
  std::filesystem::path staging_;
  bool committed_ = false;
};

}  // namespace chorus::io
