// The datasets `fetch` knows: where each file is published, its SHA-256, and how it is
// packaged. The registry is immutable after start-up and safe to read from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace chorus::data {

// One file of a dataset as its publisher serves it.
struct RemoteFile {
  // Name on the server (the last URL component) and in the cache: "ml-100k.zip".
  std::string name;
  // Lowercase hex SHA-256 of the file as served.
  std::string sha256;
  // Size as served, in bytes. Informational: progress totals and `chorus data list`.
  int64_t size_bytes = 0;
};

enum class Packaging {
  // The files are kept as downloaded (e.g. gzipped IDX files, which readers decompress).
  kPlainFiles,
  // Each file is an archive (zip or tar, optionally gzipped) that is extracted into the
  // dataset directory and then deleted.
  kArchive,
};

struct DatasetSpec {
  // The name users pass to fetch and `chorus data fetch`: "movielens-100k".
  std::string name;
  std::string description;
  // Tried in order until one serves every file intact. A file's URL is the base URL
  // followed by the file's name, so each base ends with '/'.
  std::vector<std::string> base_urls;
  std::vector<RemoteFile> files;
  Packaging packaging = Packaging::kPlainFiles;
  // Directory inside the dataset directory that fetch returns, where an archive has a
  // top-level folder ("ml-100k"). Empty: the dataset directory itself.
  std::string data_subdir;
};

// Every known dataset, in a fixed order.
std::span<const DatasetSpec> known_datasets();

// The dataset called `name`. Throws ValueError listing the known names if there is none.
const DatasetSpec& find_dataset(std::string_view name);

}  // namespace chorus::data
