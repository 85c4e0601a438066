// The step profiler: while a profile records (start() to stop()), the runtime's hooks — a
// step, a layer's call, an op's kernel (matmul, elementwise, reductions, softmax, take), a
// backward op, an optimizer update, a collective, a pipeline stage — add complete events (name, category, thread, start, duration) to one
// process-wide list, as tf.profiler's session is process-wide. When nothing records, a
// hook costs one relaxed atomic load. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chorus::profiler {

struct Event {
  std::string name;      // "d1 (Dense)", "matmul", "all_reduce"
  const char* category;  // a literal: "step", "layer", "op", "backward", "optimizer", "collective", "data"
  int64_t start_ns;      // since the profile started
  int64_t duration_ns;
  int thread;  // 0, 1, ... in the order threads first recorded
};

namespace detail {
inline std::atomic<bool> recording{false};
}  // namespace detail

// Whether a profile is recording now.
inline bool recording() { return detail::recording.load(std::memory_order_relaxed); }

// Starts recording. Throws ValueError when a profile is recording already.
void start();
// Stops recording and returns what was recorded, by start time. Events still open (a
// Scope alive on another thread) are left out. Throws ValueError when none records.
std::vector<Event> stop();

// Records its lifetime as one event, when a profile recorded at its construction.
class [[nodiscard]] Scope {
 public:
  Scope(const char* category, std::string_view name) {
    if (recording()) [[unlikely]] begin(category, name);
  }
  // An op's or a collective's literal name: measured (strlen) only when recording.
  Scope(const char* category, const char* name) {
    if (recording()) [[unlikely]] begin(category, name);
  }
  // Named "<name> (<kind>)", made only when recording: a layer's "d1 (Dense)".
  Scope(const char* category, std::string_view name, std::string_view kind) {
    if (recording()) [[unlikely]] begin(category, std::string(name).append(" (").append(kind).append(")"));
  }
  ~Scope() {
    if (start_ns_ >= 0) [[unlikely]] end();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  void begin(const char* category, std::string_view name);
  void end();

  const char* category_ = nullptr;
  std::string name_;
  int64_t start_ns_ = -1;
  uint64_t session_ = 0;  // the profile it belongs to: one stopped meanwhile drops it
};

}  // namespace chorus::profiler
