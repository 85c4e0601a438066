// Locates the project's shared data sets (../shared/data beside the repository, or
// $CHORUS_SHARED_DATA) for tests that read real files. MovieLens may not be copied into
// the repository, so those tests skip when the folder is absent. Header-only; thread-safe.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace chorus::testing {

// The shared data root: $CHORUS_SHARED_DATA if set, else <repository>/../shared/data
// (the repository root is found from this header's own path).
inline std::filesystem::path shared_data_root() {
  if (const char* env = std::getenv("CHORUS_SHARED_DATA"); env != nullptr && *env != '\0') return env;
  const std::filesystem::path header(__FILE__);  // <repo>/tests/testing/shared_data.h
  return header.parent_path().parent_path().parent_path().parent_path() / "shared" / "data";
}

// <root>/`name` ("ml-100k", "mnist") if that folder exists, else nullopt: the test then
// calls GTEST_SKIP() << shared_data_missing(name).
inline std::optional<std::string> shared_data_dir(const std::string& name) {
  const std::filesystem::path dir = shared_data_root() / name;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return std::nullopt;
  return dir.string();
}

inline std::string shared_data_missing(const std::string& name) {
  return "shared data set '" + name + "' not found at " + (shared_data_root() / name).string() +
         " (set CHORUS_SHARED_DATA to the folder holding it)";
}

}  // namespace chorus::testing
