// fetch: libcurl streams each file into a partial directory while it is hashed, libarchive
// extracts archives there, and one rename publishes the finished directory.
//
// Cache layout under <home>:
//   .<name>.lock                     flock()ed while a fetch of <name> runs
//   .partial.<name>.<pid>.<n>/       a fetch in progress (or killed: removed under the lock)
//   <name>/                          a published copy
//   <name>/.complete                 {"dataset": name, "sha256": {file: hex digest, ...}}
//
// The marker is the last file written into the partial directory, and only a directory
// with every file flushed is renamed into place; a copy without a matching marker (a user
// edit, digests changed in the registry) is replaced.
#include "chorus/data/download.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/core/error.h"
#include "chorus/data/dataset_registry.h"
#include "chorus/data/sha256.h"

namespace chorus::data {
namespace {

namespace fs = std::filesystem;
using Digests = std::map<std::string, std::string, std::less<>>;

constexpr const char* kMarkerName = ".complete";

std::string env_value(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// ---- files and directories ----

// An fd that closes itself; the functions below throw IOError naming `path`.
class File {
 public:
  File(const fs::path& path, int flags) : path_(path), fd_(::open(path.c_str(), flags | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw_error<IOError>("{}: cannot open: {}", path.string(), std::strerror(errno));
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() { ::close(fd_); }

  void write_all(const void* data, size_t size) {
    auto* bytes = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = ::write(fd_, bytes, size);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw_error<IOError>("{}: write failed: {}", path_.string(), std::strerror(errno));
      bytes += n;
      size -= static_cast<size_t>(n);
    }
  }
  void sync() {
    if (::fsync(fd_) != 0) throw_error<IOError>("{}: fsync failed: {}", path_.string(), std::strerror(errno));
  }
  int fd() const { return fd_; }

 private:
  fs::path path_;
  int fd_;
};

void sync_directory(const fs::path& dir) { File(dir, O_RDONLY | O_DIRECTORY).sync(); }

void make_directories(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw_error<IOError>("{}: cannot create directory: {}", dir.string(), ec.message());
}

void remove_tree(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) throw_error<IOError>("{}: cannot remove: {}", path.string(), ec.message());
}

// An exclusive flock() on a lock file, held for the object's lifetime. Serialises fetches
// of one dataset across threads (each holds its own open file) and processes.
class LockFile {
 public:
  explicit LockFile(const fs::path& path) : file_(path, O_RDWR | O_CREAT) {
    while (::flock(file_.fd(), LOCK_EX) != 0) {
      if (errno != EINTR) throw_error<IOError>("{}: cannot lock: {}", path.string(), std::strerror(errno));
    }
  }

 private:
  File file_;  // closing it releases the lock
};

// A partial directory, removed on destruction unless published.
class PartialDir {
 public:
  PartialDir(const fs::path& home, std::string_view name) {
    static std::atomic<int> counter{0};
    path_ = home / fmt::format(".partial.{}.{}.{}", name, ::getpid(), counter++);
    make_directories(path_);
  }
  PartialDir(const PartialDir&) = delete;
  PartialDir& operator=(const PartialDir&) = delete;
  ~PartialDir() {
    std::error_code ignored;  // best effort: a leftover is removed by the next fetch
    if (!published_) fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }
  // Renames the directory to `target` (which must not exist) and keeps it.
  void publish(const fs::path& target) {
    std::error_code ec;
    fs::rename(path_, target, ec);
    if (ec) throw_error<IOError>("{}: cannot rename to {}: {}", path_.string(), target.string(), ec.message());
    published_ = true;
  }

 private:
  fs::path path_;
  bool published_ = false;
};

// Removes partial directories of `name` left by killed fetches. REQUIRES: the lock is held.
void remove_stale_partials(const fs::path& home, std::string_view name) {
  const std::string prefix = fmt::format(".partial.{}.", name);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(home, ec)) {
    if (entry.path().filename().string().starts_with(prefix)) remove_tree(entry.path());
  }
  if (ec) throw_error<IOError>("{}: cannot list: {}", home.string(), ec.message());
}

// ---- the completion marker ----

Digests expected_digests(const DatasetSpec& spec, const FetchOptions& options) {
  Digests digests;
  for (const RemoteFile& file : spec.files) digests[file.name] = file.sha256;
  for (const auto& [file, digest] : options.sha256_overrides) {
    if (!digests.contains(file)) {
      throw_error<ValueError>("fetch {}: sha256_overrides names '{}', which is not a file of the dataset",
                              spec.name, file);
    }
    std::string lower = digest;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.size() != 64 || lower.find_first_not_of("0123456789abcdef") != std::string::npos) {
      throw_error<ValueError>("fetch {}: expected a SHA-256 of 64 hex digits for '{}', got '{}'", spec.name,
                              file, digest);
    }
    digests[file] = lower;
  }
  return digests;
}

bool is_complete(const fs::path& dir, std::string_view name, const Digests& expected) {
  std::ifstream in(dir / kMarkerName);
  if (!in) return false;
  const auto marker = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!marker.is_object() || marker.value("dataset", "") != name) return false;
  const auto digests = marker.find("sha256");
  return digests != marker.end() && *digests == nlohmann::json(expected);
}

void write_marker(const fs::path& dir, std::string_view name, const Digests& digests) {
  const std::string text = nlohmann::json{{"dataset", std::string(name)}, {"sha256", digests}}.dump(2) + "\n";
  File out(dir / kMarkerName, O_WRONLY | O_CREAT | O_TRUNC);
  out.write_all(text.data(), text.size());
  out.sync();
}

// ---- downloading ----

// Per-transfer state shared with libcurl's C callbacks, which must not throw: a failure
// is stored and rethrown once curl_easy_perform returns.
struct Transfer {
  File* out;
  Sha256 hasher;
  int64_t bytes = 0;
  int64_t size_hint = 0;
  std::string_view dataset, file;
  const FetchOptions* options;
  std::exception_ptr error;
};

size_t on_data(char* data, size_t, size_t size, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  try {
    transfer->out->write_all(data, size);
    transfer->hasher.update(data, size);
    transfer->bytes += static_cast<int64_t>(size);
    return size;
  } catch (...) {
    transfer->error = std::current_exception();
    return 0;  // any count other than `size` aborts the transfer
  }
}

int on_progress(void* user, curl_off_t total, curl_off_t, curl_off_t, curl_off_t) {
  auto* transfer = static_cast<Transfer*>(user);
  if (!transfer->options->on_progress) return 0;
  try {
    transfer->options->on_progress({.dataset = transfer->dataset,
                                    .file = transfer->file,
                                    .bytes_done = transfer->bytes,
                                    .bytes_total = total > 0 ? static_cast<int64_t>(total) : transfer->size_hint});
    return 0;
  } catch (...) {
    transfer->error = std::current_exception();
    return 1;  // aborts the transfer
  }
}

void init_curl_once() {
  static const bool initialised = [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw IOError("fetch: libcurl failed to initialise");
    return true;
  }();
  (void)initialised;
}

struct Downloaded {
  std::string sha256;
  int64_t bytes = 0;
};

// Downloads `url` into `path`, returning the SHA-256 of what arrived. Throws IOError
// naming the URL for a transport failure, an HTTP status >= 400 or a truncated body.
Downloaded download(const std::string& url, const fs::path& path, Transfer transfer) {
  init_curl_once();
  File out(path, O_WRONLY | O_CREAT | O_TRUNC);
  transfer.out = &out;
  const FetchOptions& options = *transfer.options;
  char curl_message[CURL_ERROR_SIZE] = {};  // outlives the handle that writes to it
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) throw_error<IOError>("fetch {}: {}: cannot create a libcurl handle", transfer.dataset, url);
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_message);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https,file");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "chorus-data-fetch/1");
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, static_cast<long>(options.connect_timeout_s));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(options.low_speed_bytes_per_s));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.low_speed_time_s));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  const CURLcode code = curl_easy_perform(h);
  if (transfer.error) std::rethrow_exception(transfer.error);
  if (code == CURLE_HTTP_RETURNED_ERROR) {
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    throw_error<IOError>("fetch {}: {}: HTTP status {}", transfer.dataset, url, status);
  }
  if (code != CURLE_OK) {
    const std::string received = transfer.bytes > 0 ? fmt::format(" ({} bytes received)", transfer.bytes) : "";
    throw_error<IOError>("fetch {}: {}: {}{}", transfer.dataset, url,
                         curl_message[0] != '\0' ? curl_message : curl_easy_strerror(code), received);
  }
  out.sync();
  return {transfer.hasher.finish_hex(), transfer.bytes};
}

// Downloads `file` into `dir`, trying each base URL until one serves bytes with the
// expected digest; throws IOError listing every failure otherwise.
void download_verified(const std::vector<std::string>& bases, const RemoteFile& file, const std::string& expected,
                       const fs::path& dir, std::string_view dataset, const FetchOptions& options) {
  const fs::path path = dir / file.name;
  std::vector<std::string> failures;
  for (const std::string& base : bases) {
    const std::string url = base + file.name;
    try {
      Transfer transfer{.out = nullptr,
                        .hasher = {},
                        .bytes = 0,
                        .size_hint = expected == file.sha256 ? file.size_bytes : 0,
                        .dataset = dataset,
                        .file = file.name,
                        .options = &options,
                        .error = nullptr};
      const Downloaded got = download(url, path, std::move(transfer));
      if (got.sha256 == expected) return;
      failures.push_back(fmt::format("fetch {}: {}: SHA-256 mismatch: expected {}, got {} ({} bytes)", dataset,
                                     url, expected, got.sha256, got.bytes));
    } catch (const IOError& e) {
      failures.push_back(e.what());
    }
  }
  std::error_code ignored;
  fs::remove(path, ignored);
  if (failures.size() == 1) throw IOError(failures[0]);
  std::string all = fmt::format("fetch {}: every source of {} failed:", dataset, file.name);
  for (const std::string& failure : failures) all += "\n  " + failure;
  throw IOError(all);
}

// The URL prefixes to try: the mirror (option, then environment) or the registry's.
std::vector<std::string> base_urls(const DatasetSpec& spec, const FetchOptions& options) {
  std::string mirror = !options.mirror.empty() ? options.mirror : env_value("CHORUS_DATA_MIRROR");
  if (mirror.empty()) return spec.base_urls;
  if (!mirror.ends_with('/')) mirror += '/';
  return {mirror};
}

// ---- extracting ----

// Entry names are relative paths without `..`: anything else could write outside `dest`.
bool is_safe_entry_path(std::string_view name) {
  if (name.empty() || name.front() == '/') return false;
  for (const auto& part : fs::path(name)) {
    if (part == "..") return false;
  }
  return true;
}

void copy_entry_data(archive* reader, const fs::path& path, const std::string& label) {
  File out(path, O_WRONLY | O_CREAT | O_TRUNC);
  const void* block = nullptr;
  size_t size = 0;
  la_int64_t offset = 0;
  int status = ARCHIVE_OK;
  while ((status = archive_read_data_block(reader, &block, &size, &offset)) == ARCHIVE_OK) {
    if (::lseek(out.fd(), offset, SEEK_SET) < 0) throw_error<IOError>("{}: seek failed", path.string());
    out.write_all(block, size);
  }
  if (status != ARCHIVE_EOF) throw_error<IOError>("{}: {}", label, archive_error_string(reader));
  out.sync();
}

// Extracts the archive at `path` into `dest`: regular files and directories only.
void extract(const fs::path& path, const fs::path& dest, std::string_view dataset) {
  std::unique_ptr<archive, decltype(&archive_read_free)> reader(archive_read_new(), &archive_read_free);
  archive* a = reader.get();
  archive_read_support_filter_all(a);
  archive_read_support_format_zip(a);
  archive_read_support_format_tar(a);
  const std::string label = fmt::format("fetch {}: {}", dataset, path.filename().string());
  if (archive_read_open_filename(a, path.c_str(), 1 << 16) != ARCHIVE_OK) {
    throw_error<IOError>("{}: cannot open as an archive: {}", label, archive_error_string(a));
  }
  archive_entry* entry = nullptr;
  int status = ARCHIVE_OK;
  while ((status = archive_read_next_header(a, &entry)) == ARCHIVE_OK) {
    const char* raw_name = archive_entry_pathname(entry);
    const std::string name = raw_name != nullptr ? raw_name : "";
    if (!is_safe_entry_path(name)) {
      throw_error<IOError>("{}: unsafe entry '{}': expected a relative path without '..'", label, name);
    }
    const fs::path target = dest / name;
    const auto type = archive_entry_filetype(entry);
    if (type == AE_IFDIR) {
      make_directories(target);
    } else if (type == AE_IFREG && archive_entry_hardlink(entry) == nullptr) {
      make_directories(target.parent_path());
      copy_entry_data(a, target, fmt::format("{}: entry '{}'", label, name));
    } else {
      throw_error<IOError>("{}: entry '{}' is a link or special file: expected regular files and directories",
                           label, name);
    }
  }
  if (status != ARCHIVE_EOF) throw_error<IOError>("{}: corrupt archive: {}", label, archive_error_string(a));
}

// Builds the dataset in a partial directory and publishes it as `target`.
// REQUIRES: the dataset's lock is held.
void build_dataset(const DatasetSpec& spec, const Digests& digests, const FetchOptions& options,
                   const fs::path& home, const fs::path& target) {
  PartialDir partial(home, spec.name);
  const std::vector<std::string> bases = base_urls(spec, options);
  for (const RemoteFile& file : spec.files) {
    download_verified(bases, file, digests.at(file.name), partial.path(), spec.name, options);
  }
  if (spec.packaging == Packaging::kArchive) {
    for (const RemoteFile& file : spec.files) {
      extract(partial.path() / file.name, partial.path(), spec.name);
      remove_tree(partial.path() / file.name);
    }
  }
  if (!spec.data_subdir.empty() && !fs::is_directory(partial.path() / spec.data_subdir)) {
    throw_error<IOError>("fetch {}: expected the download to contain a directory '{}'", spec.name,
                         spec.data_subdir);
  }
  write_marker(partial.path(), spec.name, digests);
  sync_directory(partial.path());
  remove_tree(target);  // an incomplete or outdated copy
  partial.publish(target);
  sync_directory(home);
}

std::string data_dir(const DatasetSpec& spec, const fs::path& target) {
  return (spec.data_subdir.empty() ? target : target / spec.data_subdir).string();
}

}  // namespace

std::string data_home(const FetchOptions& options) {
  if (!options.dir.empty()) return options.dir;
  if (std::string dir = env_value("CHORUS_DATA_HOME"); !dir.empty()) return dir;
  const std::string home = env_value("HOME");
  if (home.empty()) throw IOError("fetch: no cache directory: set CHORUS_DATA_HOME (or HOME)");
  return (fs::path(home) / ".cache" / "chorus" / "datasets").string();
}

std::optional<std::string> find_fetched(std::string_view name, const FetchOptions& options) {
  const DatasetSpec& spec = find_dataset(name);
  const fs::path target = fs::path(data_home(options)) / spec.name;
  if (!is_complete(target, spec.name, expected_digests(spec, options))) return std::nullopt;
  return data_dir(spec, target);
}

std::string fetch(std::string_view name, const FetchOptions& options) {
  const DatasetSpec& spec = find_dataset(name);
  const Digests digests = expected_digests(spec, options);
  const fs::path home = data_home(options);
  const fs::path target = home / spec.name;
  if (is_complete(target, spec.name, digests)) return data_dir(spec, target);

  make_directories(home);
  LockFile lock(home / fmt::format(".{}.lock", spec.name));
  // Another thread or process may have finished while this one waited for the lock.
  if (is_complete(target, spec.name, digests)) return data_dir(spec, target);
  remove_stale_partials(home, spec.name);
  build_dataset(spec, digests, options, home, target);
  return data_dir(spec, target);
}

}  // namespace chorus::data
