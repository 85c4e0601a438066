// A profile as a file: Chrome's trace-event JSON, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open, and the totals `chorus profile summarize` prints. Stateless;
// thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "chorus/profiler/profiler.h"

namespace chorus::profiler {

// Writes `events` as {"traceEvents": [...]}: one complete event ("ph": "X", microseconds)
// each, in process 1, plus a name for each thread. Atomic: a crash leaves no half file.
void write_chrome_trace(std::span<const Event> events, const std::filesystem::path& path);

struct KernelTotal {
  std::string category;
  std::string name;
  int64_t count = 0;
  double self_ms = 0;   // its time less the events nested in it on its thread
  double total_ms = 0;  // its time, nested events included
};

// The events of a trace file (any Chrome trace of complete events) totalled by category
// and name, most self time first. Throws ValueError naming the file when it is not such a
// trace, and IOError when it cannot be read.
std::vector<KernelTotal> summarize_trace(const std::filesystem::path& path);

// The totals as a table, the `top` first (all for 0), with each one's share of the
// trace's self time.
std::string format_summary(std::span<const KernelTotal> totals, size_t top = 0);

}  // namespace chorus::profiler
