// Helpers the libFuzzer targets share: a per-process scratch file for readers that take a
// path, and the rule every target enforces — a reader may reject bytes only with a
// chorus::Error; any other exception escaping is a finding. One fuzzing process, one thread.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "chorus/core/error.h"

namespace chorus::fuzz {

// A directory of this process's own under $TMPDIR (removed at exit), so parallel fuzzing
// jobs (-jobs=N) do not overwrite each other's files.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("chorus_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] { std::error_code ec; std::filesystem::remove_all(scratch_dir(), ec); });
    return d;
  }();
  return dir;
}

// Writes `bytes` to `path` (replacing it) and returns the path's string.
inline std::string write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path.string();
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `read`, swallowing chorus::Error (the readers' documented rejection). Any other
// exception aborts with its message, which libFuzzer reports as a crash with the input.
template <class F>
void expect_only_chorus_errors(const char* target, F&& read) {
  try {
    read();
  } catch (const chorus::Error&) {
    // Rejected cleanly.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: a non-chorus exception escaped: %s\n", target, e.what());
    std::abort();
  }
}

}  // namespace chorus::fuzz
