#include "chorus/core/trace_observer.h"

namespace chorus {
namespace {
thread_local TraceObserver* t_observer = nullptr;
}  // namespace

TraceObserver* trace_observer() { return t_observer; }

void note_constant(const Tensor& tensor) {
  if (t_observer != nullptr) t_observer->made_constant(tensor);
}

void note_host_read(const Tensor& tensor, const char* how) {
  if (t_observer != nullptr) t_observer->read_on_host(tensor, how);
}

TraceObserverScope::TraceObserverScope(TraceObserver* observer) : previous_(t_observer) {
  t_observer = observer;
}

TraceObserverScope::~TraceObserverScope() { t_observer = previous_; }

}  // namespace chorus
