// Locates the project's shared data sets for tests that read real files: ../shared/data
// beside the repository, $CHORUS_SHARED_DATA, or a copy fetched by `chorus data fetch`.
// MovieLens may not be copied into the repository, so those tests skip when none of them
// holds the data set. Header-only; thread-safe.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "chorus/core/error.h"
#include "chorus/data/download.h"

namespace chorus::testing {

// The shared data root: $CHORUS_SHARED_DATA if set, else <repository>/../shared/data
// (the repository root is found from this header's own path).
inline std::filesystem::path shared_data_root() {
  if (const char* env = std::getenv("CHORUS_SHARED_DATA"); env != nullptr && *env != '\0') return env;
  const std::filesystem::path header(__FILE__);  // <repo>/tests/testing/shared_data.h
  return header.parent_path().parent_path().parent_path().parent_path() / "shared" / "data";
}

// The name `chorus data fetch` knows a shared folder by, or "" when none is registered.
inline std::string fetch_name(const std::string& name) {
  if (name == "ml-100k") return "movielens-100k";
  if (name == "mnist") return "mnist";
  if (name == "wikitext-2") return "wikitext-2";
  return "";
}

// <root>/`name` ("ml-100k", "mnist", "wikitext-2") if that folder exists, else the copy
// `chorus data fetch` left in its cache, else nullopt: the test then calls
// GTEST_SKIP() << shared_data_missing(name).
inline std::optional<std::string> shared_data_dir(const std::string& name) {
  const std::filesystem::path dir = shared_data_root() / name;
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return dir.string();
  if (fetch_name(name).empty()) return std::nullopt;
  try {
    return data::find_fetched(fetch_name(name));
  } catch (const Error&) {  // no cache root (neither CHORUS_DATA_HOME nor HOME): not fetched
    return std::nullopt;
  }
}

inline std::string shared_data_missing(const std::string& name) {
  std::string message = "shared data set '" + name + "' not found at " + (shared_data_root() / name).string() +
                        ": set CHORUS_SHARED_DATA to the folder holding it";
  if (!fetch_name(name).empty()) message += ", or run `build/chorus data fetch " + fetch_name(name) + "`";
  return message;
}

}  // namespace chorus::testing
