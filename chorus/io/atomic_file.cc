// Atomic file and directory replacement (POSIX).
//
// write_file_atomically(path, bytes):
//   1. create `<path>.tmp-<pid>-<random>` beside the target (O_EXCL: never reuses a name)
//   2. write the bytes, fsync the file, close it (close reports delayed write errors)
//   3. rename() it over `path`: readers see the old file or the new one, never a mix
//   4. fsync the parent directory so the rename itself survives a power cut
// On failure before step 3 the temporary is unlinked and `path` is untouched.
//
// AtomicDirectory::commit():
//   1. fsync every file and directory under the staging directory
//   2. if `path` exists, swap the two names with renameat2(RENAME_EXCHANGE), one atomic
//      step; where the file system cannot, rename `path` to `<path>.old-<pid>-<random>`
//      and the staging directory to `path` (a crash between the two leaves only .old)
//   3. fsync the parent directory, then remove the old tree
//
// A writer killed midway leaves its .tmp (or, between the two renames of step 2's
// fallback, an .old and no target). Both carry the writer's PID, so the next write of the
// target removes those of ended processes and never one that a live process is writing.
#include "chorus/io/atomic_file.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "chorus/core/error.h"

namespace chorus::io {
namespace {

namespace fs = std::filesystem;

// Throws "<path>: <what>: <strerror(err)>".
template <class... Args>
[[noreturn]] void fail_with(int err, const fs::path& path, fmt::format_string<Args...> what, Args&&... args) {
  throw_error<IOError>("{}: {}: {}", path.string(), fmt::format(what, std::forward<Args>(args)...), std::strerror(err));
}

// The same with the current errno, read before anything (formatting allocates) can change it.
template <class... Args>
[[noreturn]] void fail(const fs::path& path, fmt::format_string<Args...> what, Args&&... args) {
  const int err = errno;
  fail_with(err, path, what, std::forward<Args>(args)...);
}

// An open file descriptor that closes itself.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now and returns close()'s errno (0 on success): NFS reports write errors here.
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

// "<pid>-<16 hex digits>": unique per process and, with O_EXCL, per call.
std::string unique_suffix() {
  thread_local std::mt19937_64 rng([] {
    std::random_device device;
    return (uint64_t{device()} << 32) ^ device();
  }());
  return fmt::format("{}-{:016x}", ::getpid(), rng());
}

// `<path>.<tag>-<pid>-<random>`, beside `path` so that rename() stays on one file system.
fs::path sibling(const fs::path& path, std::string_view tag) {
  fs::path result = path;
  result += fmt::format(".{}-{}", tag, unique_suffix());
  return result;
}

fs::path parent_of(const fs::path& path) {
  const fs::path parent = path.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

// A path naming a file or directory, without a trailing separator ("a/b/" -> "a/b").
fs::path without_trailing_separator(const fs::path& path) {
  fs::path result = path;
  while (!result.empty() && !result.has_filename() && result.has_relative_path()) {
    result = result.parent_path();
  }
  if (!result.has_filename()) throw_error<IOError>("{}: expected a path that names a file or directory", path.string());
  return result;
}

// Parses `<target>.<tag>-<pid>-<16 hex digits>` (what sibling() makes): the target's
// file name, tag and pid; nullopt for any other name.
struct TemporaryName {
  std::string target, tag;
  long pid = 0;
};
std::optional<TemporaryName> parse_temporary_name(const std::string& name) {
  constexpr size_t kHex = 16;
  for (std::string_view tag : {"tmp", "old"}) {
    const std::string marker = fmt::format(".{}-", tag);
    const size_t at = name.rfind(marker);
    if (at == std::string::npos || at == 0) continue;
    const std::string_view rest = std::string_view(name).substr(at + marker.size());
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string_view::npos || rest.size() - dash - 1 != kHex) continue;
    const std::string_view pid = rest.substr(0, dash), hex = rest.substr(dash + 1);
    if (pid.size() > 9 || !std::all_of(pid.begin(), pid.end(), ::isdigit) ||
        !std::all_of(hex.begin(), hex.end(), ::isxdigit)) {
      continue;
    }
    return TemporaryName{name.substr(0, at), std::string(tag), std::stol(std::string(pid))};
  }
  return std::nullopt;
}

// A zombie (ended, not yet reaped: an orphan waits for init, which in a container may reap
// it only seconds later) writes nothing more: it counts as ended.
bool process_alive(long pid) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;  // no /proc: the signal's answer stands
  const size_t name_end = line.rfind(')');     // the name may hold spaces and parentheses
  return name_end == std::string::npos || name_end + 2 >= line.size() || line[name_end + 2] != 'Z';
}

void fsync_path(const fs::path& path, bool directory) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0)));
  if (fd.get() < 0) fail(path, "cannot open for fsync");
  if (::fsync(fd.get()) != 0) fail(path, "fsync failed");
}

// Every regular file and directory under `root` (not following links), then `root`.
void fsync_tree(const fs::path& root) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::file_status status = it->symlink_status();
    if (fs::is_regular_file(status) || fs::is_directory(status)) fsync_path(it->path(), fs::is_directory(status));
  }
  if (ec) throw_error<IOError>("{}: cannot list the directory: {}", root.string(), ec.message());
  fsync_path(root, /*directory=*/true);
}

// Moves the directory `staging` to `target`. Returns where the previous `target` now is
// (empty if there was none); the caller removes it.
fs::path swap_in(const fs::path& staging, const fs::path& target) {
  struct stat st {};
  if (::lstat(target.c_str(), &st) != 0) {
    if (errno != ENOENT) fail(target, "cannot stat");
    if (::rename(staging.c_str(), target.c_str()) != 0) fail(target, "cannot rename {} to it", staging.c_str());
    return {};
  }
  if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) return staging;
  if (errno != EINVAL && errno != ENOSYS) fail(target, "cannot swap in {}", staging.c_str());
  // This file system cannot exchange names: two renames, with a moment where only .old exists.
  const fs::path old = sibling(target, "old");
  if (::rename(target.c_str(), old.c_str()) != 0) fail(target, "cannot rename it aside to {}", old.c_str());
  if (::rename(staging.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::rename(old.c_str(), target.c_str());  // put the old one back; best effort
    fail_with(err, target, "cannot rename {} to it", staging.c_str());
  }
  return old;
}

}  // namespace

void write_file_atomically(const fs::path& path, std::string_view bytes) {
  const fs::path target = without_trailing_separator(path);
  remove_stale_temporaries(target);
  fs::path temp;
  int raw_fd = -1;
  for (int attempt = 0; attempt < 16; ++attempt) {  // O_EXCL retry: a name clash is astronomically rare
    temp = sibling(target, "tmp");
    raw_fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (raw_fd >= 0 || errno != EEXIST) break;
  }
  if (raw_fd < 0) fail(target, "cannot create the temporary file {}", temp.c_str());
  Fd fd(raw_fd);
  try {
    write_all(fd.get(), bytes, temp);
    if (::fsync(fd.get()) != 0) fail(temp, "fsync failed");
    if (const int err = fd.close(); err != 0) fail_with(err, temp, "close failed");
    if (::rename(temp.c_str(), target.c_str()) != 0) {
      fail(target, "cannot rename {} over it", temp.c_str());
    }
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  fsync_path(parent_of(target), /*directory=*/true);
}

void write_all(int fd, std::string_view bytes, const fs::path& path) {
  const char* data = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, "write failed");
    data += n;
    left -= static_cast<size_t>(n);
  }
}

void remove_atomically(const fs::path& path) {
  const fs::path target = without_trailing_separator(path);
  const fs::path aside = sibling(target, "tmp");
  if (::rename(target.c_str(), aside.c_str()) != 0) {
    if (errno == ENOENT) return;
    fail(target, "cannot rename it aside to {}", aside.c_str());
  }
  std::error_code ec;
  fs::remove_all(aside, ec);
  if (ec) throw_error<IOError>("{}: cannot remove it: {}", aside.string(), ec.message());
}

std::string read_file(const fs::path& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) fail(path, "cannot open");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail(path, "cannot stat");
  // Regular files are read in one pass (the +1 sees EOF); others (pipes, /proc) grow.
  std::string out(S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) + 1 : size_t{1} << 16, '\0');
  size_t filled = 0;
  for (;;) {
    if (filled == out.size()) out.resize(out.size() * 2);
    const ssize_t n = ::read(fd.get(), out.data() + filled, out.size() - filled);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, "read failed");
    if (n == 0) break;
    filled += static_cast<size_t>(n);
  }
  out.resize(filled);
  return out;
}

AtomicDirectory::AtomicDirectory(fs::path path) : path_(without_trailing_separator(path)) {
  remove_stale_temporaries(path_);
  for (int attempt = 0; attempt < 16; ++attempt) {
    staging_ = sibling(path_, "tmp");
    if (::mkdir(staging_.c_str(), 0777) == 0) return;
    if (errno != EEXIST) break;
  }
  fail(path_, "cannot create the staging directory {}", staging_.c_str());
}

AtomicDirectory::~AtomicDirectory() {
  if (committed_) return;
  std::error_code ec;  // a destructor must not throw; a leftover .tmp directory is harmless
  fs::remove_all(staging_, ec);
}

void AtomicDirectory::commit() {
  if (committed_) throw_error<IOError>("{}: commit() called twice", path_.string());
  fsync_tree(staging_);

  const fs::path old = swap_in(staging_, path_);
  committed_ = true;
  auto remove_old = [&] {
    std::error_code ec;  // the new tree is in place: a leftover old tree is garbage, not an error
    if (!old.empty()) fs::remove_all(old, ec);
  };
  try {
    fsync_path(parent_of(path_), /*directory=*/true);
  } catch (...) {
    remove_old();
    throw;
  }
  remove_old();
}

std::vector<AtomicTemporary> list_atomic_temporaries(const fs::path& dir) {
  std::vector<AtomicTemporary> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (auto name = parse_temporary_name(it->path().filename().string())) {
      out.push_back({it->path(), name->pid, process_alive(name->pid)});
    }
  }
  if (ec) throw_error<IOError>("{}: cannot list the directory: {}", dir.string(), ec.message());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return out;
}

std::vector<fs::path> remove_stale_temporaries(const fs::path& path) {
  const fs::path target = without_trailing_separator(path);
  const std::string target_name = target.filename().string();
  std::vector<fs::path> stale, aside;  // aside: dead writers' previous versions (.old)
  std::error_code ec;
  for (auto it = fs::directory_iterator(parent_of(target), ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    auto name = parse_temporary_name(it->path().filename().string());
    if (!name || name->target != target_name || process_alive(name->pid)) continue;
    (name->tag == "old" ? aside : stale).push_back(it->path());
  }
  if (ec) return {};  // a missing parent: nothing to clean, and the write names the real problem
  std::vector<fs::path> done;
  if (!aside.empty() && !fs::exists(fs::symlink_status(target))) {
    // The newest version moved aside is the one the crashed swap was replacing.
    auto newest = std::max_element(aside.begin(), aside.end(), [](const fs::path& a, const fs::path& b) {
      std::error_code ea, eb;
      return fs::last_write_time(a, ea) < fs::last_write_time(b, eb);
    });
    if (::rename(newest->c_str(), target.c_str()) != 0) fail(target, "cannot restore {} to it", newest->c_str());
    done.push_back(*newest);
    aside.erase(newest);
  }
  stale.insert(stale.end(), aside.begin(), aside.end());
  for (const fs::path& p : stale) {
    fs::remove_all(p, ec);
    if (ec) throw_error<IOError>("{}: cannot remove this stale temporary: {}", p.string(), ec.message());
    done.push_back(p);
  }
  return done;
}

}  // namespace chorus::io
