#include "chorus/profiler/chrome_trace.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "chorus/core/error.h"
#include "chorus/io/atomic_file.h"

namespace chorus::profiler {
namespace {

using nlohmann::json;

struct Span {
  int64_t tid;
  double start_us, duration_us;
  size_t total;  // index into the totals
};

// The complete events of `trace` with their (category, name) totals counted in `totals`.
std::vector<Span> read_spans(const json& trace, const std::filesystem::path& path, std::vector<KernelTotal>& totals) {
  const json* events = trace.is_object() && trace.contains("traceEvents") ? &trace["traceEvents"] : &trace;
  if (!events->is_array()) throw_error<ValueError>("{}: not a Chrome trace (no traceEvents list)", path.string());
  std::map<std::pair<std::string, std::string>, size_t> index;
  std::vector<Span> spans;
  for (const json& e : *events) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    if (!e.contains("ts") || !e.contains("dur") || !e["ts"].is_number() || !e["dur"].is_number()) {
      throw_error<ValueError>("{}: a complete event without a numeric ts and dur: {}", path.string(), e.dump());
    }
    const auto key = std::pair{e.value("cat", ""), e.value("name", "")};
    const auto [it, added] = index.try_emplace(key, totals.size());
    if (added) totals.push_back(KernelTotal{.category = key.first, .name = key.second});
    const double duration = e["dur"].get<double>();
    KernelTotal& t = totals[it->second];
    ++t.count, t.total_ms += duration / 1000, t.self_ms += duration / 1000;
    spans.push_back(Span{e.value("tid", int64_t{0}), e["ts"].get<double>(), duration, it->second});
  }
  return spans;
}

// Takes each event's time out of the self time of the event it is nested in.
void subtract_nested(std::vector<Span>& spans, std::vector<KernelTotal>& totals) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.tid != b.tid ? a.tid < b.tid : a.start_us != b.start_us ? a.start_us < b.start_us : a.duration_us > b.duration_us;
  });
  std::vector<const Span*> open;
  for (const Span& s : spans) {
    while (!open.empty() &&
           (open.back()->tid != s.tid || open.back()->start_us + open.back()->duration_us <= s.start_us)) {
      open.pop_back();
    }
    if (!open.empty()) totals[open.back()->total].self_ms -= s.duration_us / 1000;
    open.push_back(&s);
  }
}

}  // namespace

void write_chrome_trace(std::span<const Event> events, const std::filesystem::path& path) {
  json trace_events = json::array();
  std::set<int> threads;
  for (const Event& e : events) {
    trace_events.push_back({{"name", e.name}, {"cat", e.category}, {"ph", "X"}, {"pid", 1}, {"tid", e.thread},
                            {"ts", static_cast<double>(e.start_ns) / 1000}, {"dur", static_cast<double>(e.duration_ns) / 1000}});
    threads.insert(e.thread);
  }
  for (const int t : threads) {
    trace_events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", t},
                            {"args", {{"name", fmt::format("chorus thread {}", t)}}}});
  }
  const json trace = {{"traceEvents", std::move(trace_events)}, {"displayTimeUnit", "ms"},
                      {"otherData", {{"producer", "chorus"}}}};
  io::write_file_atomically(path, trace.dump());
}

std::vector<KernelTotal> summarize_trace(const std::filesystem::path& path) {
  const std::string text = io::read_file(path);
  const json trace = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (trace.is_discarded()) throw_error<ValueError>("{}: not a Chrome trace (not JSON)", path.string());
  std::vector<KernelTotal> totals;
  std::vector<Span> spans = read_spans(trace, path, totals);
  subtract_nested(spans, totals);
  std::stable_sort(totals.begin(), totals.end(), [](const KernelTotal& a, const KernelTotal& b) { return a.self_ms > b.self_ms; });
  return totals;
}

std::string format_summary(std::span<const KernelTotal> totals, size_t top) {
  double all = 0;
  for (const KernelTotal& t : totals) all += t.self_ms;
  std::string out = fmt::format("{:>10} {:>7} {:>10} {:>8}  {:<10} {}\n", "self ms", "share", "total ms", "count",
                                "category", "name");
  const size_t shown = top == 0 ? totals.size() : std::min(top, totals.size());
  for (size_t i = 0; i < shown; ++i) {
    const KernelTotal& t = totals[i];
    out += fmt::format("{:>10.3f} {:>6.1f}% {:>10.3f} {:>8}  {:<10} {}\n", t.self_ms, all > 0 ? 100 * t.self_ms / all : 0.0,
                       t.total_ms, t.count, t.category, t.name);
  }
  return out;
}

}  // namespace chorus::profiler
