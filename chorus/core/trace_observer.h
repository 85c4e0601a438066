// What a trace (chorus/jit) learns from core while it records on one thread: each storage
// made, each tensor made as a constant on the host, each tensor read on the host. The
// observer is the calling thread's alone (as the gradient tape is); TraceObserverScope
// installs one and restores the previous one.
#pragma once

namespace chorus {

class Storage;
class Tensor;

class TraceObserver {
 public:
  virtual ~TraceObserver() = default;
  // A storage was allocated on this thread (a new buffer, even at a freed one's address).
  virtual void allocated(const Storage& storage) = 0;
  // `tensor` was filled on the host with values known now (zeros, full, from_values): a
  // constant of the trace.
  virtual void made_constant(const Tensor& tensor) = 0;
  // The host read `tensor`'s values (`how`: "item", "to_vector"): a step whose control flow
  // depends on them cannot be one static graph.
  virtual void read_on_host(const Tensor& tensor, const char* how) = 0;
  // Code with no compiled form ran (`why`: a collective inside the step whose results come
  // from other threads): the call cannot be one static graph.
  virtual void cannot_trace(const char* why) = 0;
};

namespace detail {
inline constinit thread_local TraceObserver* t_trace_observer = nullptr;
}  // namespace detail

// This thread's observer, or nullptr: one thread-local load, inline, since every kernel
// launch and allocation asks.
inline TraceObserver* trace_observer() { return detail::t_trace_observer; }

// Tell this thread's observer, if any (the calls core makes).
void note_constant(const Tensor& tensor);
void note_host_read(const Tensor& tensor, const char* how);
void note_cannot_trace(const char* why);

class [[nodiscard]] TraceObserverScope {
 public:
  explicit TraceObserverScope(TraceObserver* observer);
  ~TraceObserverScope();
  TraceObserverScope(const TraceObserverScope&) = delete;
  TraceObserverScope& operator=(const TraceObserverScope&) = delete;

 private:
  TraceObserver* previous_;
};

}  // namespace chorus
