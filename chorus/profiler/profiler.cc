#include "chorus/profiler/profiler.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "chorus/core/error.h"

namespace chorus::profiler {
namespace {

// One lock for the list: an event is recorded once per layer call or backward op, far
// rarer than the work it times, so a per-thread buffer would buy nothing measurable.
struct Recorder {
  std::mutex mutex;
  uint64_t session = 0;  // counts profiles; 0 before the first
  std::chrono::steady_clock::time_point origin;
  std::vector<Event> events;
  std::map<std::thread::id, int> threads;
};

Recorder& recorder() {
  static Recorder r;
  return r;
}

int64_t since(std::chrono::steady_clock::time_point origin) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - origin).count();
}

}  // namespace

void start() {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (recording()) throw_error<ValueError>("profiler: a profile is recording already; stop it before starting another");
  ++r.session;
  r.events.clear();
  r.threads.clear();
  r.origin = std::chrono::steady_clock::now();
  detail::recording.store(true, std::memory_order_relaxed);
}

std::vector<Event> stop() {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (!recording()) throw_error<ValueError>("profiler: no profile is recording");
  detail::recording.store(false, std::memory_order_relaxed);
  std::vector<Event> out = std::move(r.events);
  r.events.clear();
  std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  return out;
}

void Scope::begin(const char* category, std::string_view name) {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (!recording()) return;  // stopped since the check
  category_ = category;
  name_ = name;
  session_ = r.session;
  start_ns_ = since(r.origin);
}

void Scope::end() {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (!recording() || r.session != session_) return;
  const auto [thread, added] = r.threads.try_emplace(std::this_thread::get_id(), static_cast<int>(r.threads.size()));
  r.events.push_back(Event{std::move(name_), category_, start_ns_, since(r.origin) - start_ns_, thread->second});
}

}  // namespace chorus::profiler
