// fetch: downloads a known dataset (dataset_registry.h) into a local cache, verifies
// every file's SHA-256, extracts archives, and publishes the result atomically, so a
// failed or killed download is never taken for a whole dataset. Safe to call from many
// threads and processes at once: they serialise on a lock file per dataset.
//
//   auto dir = chorus::data::fetch("movielens-100k");   // .../movielens-100k/ml-100k
//   auto ratings = chorus::datasets::movielens_100k::ratings(dir);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace chorus::data {

// How far one file's download has come; passed to FetchOptions::on_progress.
struct FetchProgress {
  std::string_view dataset;
  std::string_view file;
  int64_t bytes_done = 0;
  // Total bytes of this file: the server's Content-Length, else the registry's size;
  // 0 when neither is known.
  int64_t bytes_total = 0;
};

struct FetchOptions {
  // Cache root holding one directory per dataset. Default (empty): $CHORUS_DATA_HOME if
  // set, else $HOME/.cache/chorus/datasets.
  std::string dir;
  // Replaces the scheme, host and directory of every registry URL: a file is fetched from
  // `mirror/<file name>` (http://, https:// or file://). Default (empty):
  // $CHORUS_DATA_MIRROR if set, else the registry's URLs, tried in order.
  std::string mirror;
  // Expected SHA-256 (hex) per file name, replacing the registry's digest: for a mirror
  // that serves other bytes, e.g. a test's own small archive. Default: none. Every key
  // must name a file of the dataset (ValueError otherwise).
  std::map<std::string, std::string, std::less<>> sha256_overrides;
  // Seconds to wait for a TCP/TLS connection before trying the next URL.
  int connect_timeout_s = 30;
  // A transfer slower than `low_speed_bytes_per_s` for `low_speed_time_s` seconds is
  // abandoned, so a stalled server fails the fetch instead of hanging it.
  int low_speed_bytes_per_s = 1024;
  int low_speed_time_s = 60;
  // Called on the fetching thread as bytes arrive (often: throttle any printing). An
  // exception it throws aborts the fetch, cleans up, and propagates. Default: none.
  std::function<void(const FetchProgress&)> on_progress;
};

// Returns the directory that holds dataset `name` (what its readers take), downloading it
// first unless a complete copy is already cached, in which case nothing touches the
// network.
//
// Layout: `<home>/<name>/` holds the dataset's files (archives extracted, plain files as
// served) and `.complete`, a JSON marker with the digests it was verified against; the
// returned directory is `<home>/<name>/<data_subdir>`. A copy counts as complete only if
// its marker lists exactly the expected digests.
//
// Steps: files are streamed into `<home>/.partial.<name>.<pid>.<n>/` while their SHA-256
// is computed; archives are extracted there (entries with absolute paths, `..`
// components, links or devices are rejected); the marker is written and everything is
// flushed; then the directory is renamed to `<home>/<name>` in one step. Partial
// directories left by a killed process are removed by the next fetch.
//
// Throws ValueError for an unknown name or a bad override, and IOError naming the URL (or
// file) for a network failure, an HTTP status >= 400, a truncated transfer, a digest
// mismatch (with the expected and actual digests) or an unsafe archive entry; nothing is
// left behind that a later call could take for a complete copy.
std::string fetch(std::string_view name, const FetchOptions& options = {});

// The directory fetch would return if a complete copy of `name` is cached, else nullopt.
// Never touches the network. Throws ValueError for an unknown name.
std::optional<std::string> find_fetched(std::string_view name, const FetchOptions& options = {});

// The cache root that `options` select (see FetchOptions::dir). Throws IOError if neither
// CHORUS_DATA_HOME nor HOME is set.
std::string data_home(const FetchOptions& options = {});

}  // namespace chorus::data
