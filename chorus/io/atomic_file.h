// Atomic replacement of files and directories: the new content is written under a
// temporary name beside the target, flushed (fsync), then renamed over it, so a crash
// at any point leaves either the old or the new version, never a mix; the temporaries of
// a crashed writer are removed by the next write of the same target. Thread-safe for
// distinct targets.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace chorus::io {

// Replaces `path` with `bytes`. Throws IOError naming the path on failure.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// Removes the file or directory `path` (nothing when it is missing) by renaming it aside to
// a temporary first, so that a crash midway never leaves part of it under its name; the
// temporary is then a dead writer's, which remove_stale_temporaries removes. Throws IOError.
void remove_atomically(const std::filesystem::path& path);

// Writes all of `bytes` to the open file `fd` (`path` names it in errors), retrying
// short writes and EINTR. Throws IOError "<path>: write failed: <reason>".
void write_all(int fd, std::string_view bytes, const std::filesystem::path& path);

// Reads a whole file. Throws IOError naming the path.
std::string read_file(const std::filesystem::path& path);

// A temporary an atomic write of `target` left beside it: `<target>.tmp-<pid>-<hex>`
// (being written) or `<target>.old-<pid>-<hex>` (the previous version, moved aside).
struct AtomicTemporary {
  std::filesystem::path path;
  long pid = 0;        // the process that made it
  bool alive = false;  // whether that process still runs (then it may still be writing)
};
// The temporaries of every target in `dir`, sorted by path.
std::vector<AtomicTemporary> list_atomic_temporaries(const std::filesystem::path& dir);
// Removes the temporaries of `target` whose process has ended (a crash mid-save), as
// every atomic write of `target` does first. If `target` itself is missing and a dead
// process left its previous version aside (.old), that version is renamed back instead.
// Returns the paths removed or restored. Throws IOError naming a path it cannot remove.
std::vector<std::filesystem::path> remove_stale_temporaries(const std::filesystem::path& target);

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
