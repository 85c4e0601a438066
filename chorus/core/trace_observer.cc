#include "chorus/core/trace_observer.h"

namespace chorus {

void note_constant(const Tensor& tensor) {
  if (detail::t_trace_observer != nullptr) detail::t_trace_observer->made_constant(tensor);
}

void note_host_read(const Tensor& tensor, const char* how) {
  if (detail::t_trace_observer != nullptr) detail::t_trace_observer->read_on_host(tensor, how);
}

void note_cannot_trace(const char* why) {
  if (detail::t_trace_observer != nullptr) detail::t_trace_observer->cannot_trace(why);
}

TraceObserverScope::TraceObserverScope(TraceObserver* observer) : previous_(detail::t_trace_observer) {
  detail::t_trace_observer = observer;
}

TraceObserverScope::~TraceObserverScope() { detail::t_trace_observer = previous_; }

}  // namespace chorus
