// Tracing: ops launch their kernels through launch(), which runs the kernel now and, while
// a Tracer is installed on the calling thread, records it as a node of a Graph (as
// tf.function's trace records a Python call's ops). The tracer also learns from core which
// storages the call made, which it filled on the host (constants) and which it read on the
// host, so an op with no compiled form or control flow on tensor values marks the trace as
// failed instead of giving a wrong graph. One thread's; not shared.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "chorus/core/trace_observer.h"
#include "chorus/jit/graph.h"

namespace chorus::jit {

class Tracer final : public TraceObserver {
 public:
  // Installs itself on the calling thread until destroyed; `arguments` are the values the
  // traced call receives (each becomes a kArgument buffer).
  Tracer(std::string name, std::span<const Tensor> arguments);
  ~Tracer() override;
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // The calling thread's tracer, or nullptr (inline: every kernel launch asks).
  static Tracer* current() {
    TraceObserver* observer = trace_observer();
    return observer == nullptr ? nullptr : dynamic_cast<Tracer*>(observer);
  }

  // Adds `node` (op, kind, codes or kernel set; inputs and outputs left empty) launched on
  // `inputs` writing `outputs`.
  void record(Node node, std::span<const Tensor> inputs, std::span<const Tensor> outputs);

  // The first reason this call cannot be one static graph, or empty; it names the layer
  // being called when it happened.
  const std::string& failure() const { return failure_; }
  // The graph of the call that returned `results`. Throws ValueError naming failure() when
  // there is one (or a result no kernel wrote).
  Graph finish(std::span<const Tensor> results);

  void allocated(const Storage& storage) override;
  void made_constant(const Tensor& tensor) override;
  void read_on_host(const Tensor& tensor, const char* how) override;
  void cannot_trace(const char* why) override { fail(why); }

  // The layers being called, innermost last (TracedLayer): a node records the innermost.
  void enter_layer(std::string path) { layers_.push_back(std::move(path)); }
  void exit_layer() { layers_.pop_back(); }

 private:
  int input_value(const Tensor& tensor, const std::string& op, size_t position);
  int output_value(const Tensor& tensor, const std::string& op);
  int add_value(int buffer, const Tensor& tensor);
  int add_buffer(BufferKind kind, const TensorImpl& impl);
  void fail(std::string reason);

  Graph graph_;
  TraceObserverScope scope_;
  std::unordered_map<const Storage*, int> buffer_of_;  // storages the graph knows
  // Allocated during the trace, not yet known: the layer being called then (or empty).
  std::unordered_map<const Storage*, std::string> made_here_;
  std::unordered_map<int, size_t> bases_;              // buffer: its byte offset in its storage
  std::unordered_map<std::string, int> value_of_;      // "buffer:offset:shape:dtype": the value
  std::string failure_;
  std::vector<std::string> layers_;
};

// While alive, the calling thread's trace (if any) attributes the nodes it records, and
// its failure, to the layer at `path` (Layer::operator()). Nothing when no trace runs.
class [[nodiscard]] TracedLayer {
 public:
  explicit TracedLayer(const std::string& path) : tracer_(Tracer::current()) {
    if (tracer_ != nullptr) [[unlikely]] tracer_->enter_layer(path);
  }
  ~TracedLayer() {
    if (tracer_ != nullptr) [[unlikely]] tracer_->exit_layer();
  }
  TracedLayer(const TracedLayer&) = delete;
  TracedLayer& operator=(const TracedLayer&) = delete;

 private:
  Tracer* tracer_;
};

// Runs `kernel(inputs, outputs)` and records it when the calling thread traces. `kernel`
// must read nothing but its arguments and what it captures by value (see Kernel).
template <class F>
void launch(const char* op, std::span<const Tensor> inputs, std::span<const Tensor> outputs, F&& kernel) {
  kernel(inputs, outputs);
  if (Tracer* tracer = Tracer::current()) [[unlikely]] {
    tracer->record(Node{.op = op, .kind = NodeKind::kKernel, .kernel = Kernel(std::forward<F>(kernel))}, inputs,
                   outputs);
  }
}
template <class F>
void launch(const char* op, std::initializer_list<Tensor> inputs, std::initializer_list<Tensor> outputs,
            F&& kernel) {
  launch(op, std::span<const Tensor>(inputs.begin(), inputs.size()),
         std::span<const Tensor>(outputs.begin(), outputs.size()), std::forward<F>(kernel));
}

// Runs `kernel(inputs, outputs)` as one node whose insides are not traced: host code that
// must read the step's state at every run (an optimizer's learning rate and iteration
// count, the metrics' totals). The ops it calls are neither recorded nor observed, it may
// read tensors on the host, and dead-code elimination keeps it.
template <class F>
void launch_host(const char* op, std::span<const Tensor> inputs, std::span<const Tensor> outputs, F&& kernel) {
  {
    TraceObserverScope untraced(nullptr);
    kernel(inputs, outputs);
  }
  if (Tracer* tracer = Tracer::current()) [[unlikely]] {
    tracer->record(Node{.op = op, .kind = NodeKind::kKernel, .kernel = Kernel(std::forward<F>(kernel)), .effects = true},
                   inputs, outputs);
  }
}

// Records a kernel the caller has just run on `inputs` into `outputs`, when the calling
// thread traces: make_kernel() is called only then and returns a Kernel owning copies of
// what it needs, so that an op pays nothing for it when nothing traces.
template <class MakeKernel>
void record(const char* op, std::initializer_list<Tensor> inputs, std::initializer_list<Tensor> outputs,
            MakeKernel&& make_kernel) {
  if (Tracer* tracer = Tracer::current()) [[unlikely]] {
    tracer->record(Node{.op = op, .kind = NodeKind::kKernel, .kernel = make_kernel()},
                   {inputs.begin(), inputs.size()}, {outputs.begin(), outputs.size()});
  }
}

// backend::cpu::unary/binary, launched as nodes the fusion pass can chain.
void launch_unary(const char* op, backend::cpu::UnaryOp code, const Tensor& x, const Tensor& out,
                  backend::cpu::KernelParams params = {});
void launch_binary(const char* op, backend::cpu::BinaryOp code, const Tensor& a, const Tensor& b, const Tensor& out,
                   backend::cpu::KernelParams params = {});

}  // namespace chorus::jit
