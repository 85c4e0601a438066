// Shared benchmark harness: times a callable repeatedly, reports the median, and writes
// one JSON object per measurement to stdout (and appends to $CHORUS_BENCH_JSON if set).
// Every benchmark compares against a reference measured in the same run, as a ratio,
// because this machine's absolute speed drifts (PLATFORM.md). Single-threaded use.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace chorus::bench {

// The median of `values` (the upper middle one of an even count); 0 for none.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// Seconds per call of fn over one sample of `iters` calls (for benches that alternate
// samples of two callables).
template <class Fn>
double sample_seconds(Fn& fn, int iters) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
}

// Seconds per call of fn: runs it `warmup` times, then `repeats` samples of `iters`
// calls each, and returns the median sample divided by iters.
template <class Fn>
double median_seconds(Fn&& fn, int iters = 10, int repeats = 7, int warmup = 2) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) fn();
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    samples.push_back(elapsed.count() / iters);
  }
  return median(std::move(samples));
}

// Picks iters so one sample of fn takes about `target_seconds`.
template <class Fn>
int calibrate_iters(Fn&& fn, double target_seconds = 0.05) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  const std::chrono::duration<double> once = std::chrono::steady_clock::now() - start;
  return std::max(1, static_cast<int>(target_seconds / std::max(once.count(), 1e-9)));
}

inline std::string utc_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// Prints `record` (plus "time") as one JSON line.
inline void emit(nlohmann::json record) {
  record["time"] = utc_now();
  const std::string line = record.dump();
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  if (const char* path = std::getenv("CHORUS_BENCH_JSON")) std::ofstream(path, std::ios::app) << line << "\n";
}

// The shared data folder: argv[1], else $CHORUS_SHARED_DATA, else ../shared/data beside
// the repository.
inline std::string shared_data_root(int argc, char** argv) {
  if (argc > 1) return argv[1];
  if (const char* env = std::getenv("CHORUS_SHARED_DATA"); env != nullptr && *env != '\0') return env;
  return (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "shared/data").string();
}

// The lines of a text file longer than 100 bytes (the BERT tutorial's filter).
inline std::vector<std::string> long_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.size() > 100) lines.push_back(line);
  }
  return lines;
}

}  // namespace chorus::bench
