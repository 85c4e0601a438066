// GradientTape: reverse-mode differentiation on a per-thread tape (tf.GradientTape).
// While a tape is alive and recording, every differentiable op run on *its own thread*
// whose inputs are tracked appends a record (inputs, outputs, backward function); the
// tape is this thread's alone, so replicas on different threads never share autograd
// state. Trainable Variables are watched automatically; other tensors through watch().
//
//   autograd::GradientTape tape;
//   Tensor loss = ops::mean(ops::square(ops::matmul(x, w) - y));
//   std::vector<Tensor> grads = tape.gradient(loss, {w});
//
// Gradients from every use of a tensor accumulate (sum). Tapes nest: only the innermost
// tape records, and the previous one is restored when a tape is destroyed.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chorus/autograd/indexed_slices.h"
#include "chorus/core/tensor.h"

namespace chorus::autograd {

// Called by GradientTape::gradient as soon as the gradient of sources[index] is final
// (no record left to process uses it), while the backward pass goes on: data-parallel
// replicas start reducing those gradients early. Undefined where the source gets none.
using GradientReadyFn = std::function<void(size_t index, const Tensor& gradient)>;

// GradientReadyFn, plus (optionally) the gradient of a source in blocks of leading-axis
// rows while one backward function computes it: the reduction of a Dense kernel's first
// rows then overlaps computing the rest, where the whole kernel would wait for the end of
// backward. `row_ends(index)`: where the consumer wants blocks of sources[index] to end
// (ascending, the last equal to the leading dimension; empty: whole only).
// `rows_ready(index, gradient, end)`: rows [0, end) of `gradient` are final.
// `takes_slices(index)`: whether sources[index]'s gradient may come as IndexedSlices when
// gradient() is asked for sparse gradients (unset: every source's may); `ready` then gets
// an undefined tensor for it.
struct GradientStreaming {
  GradientReadyFn ready;
  std::function<std::span<const int64_t>(size_t index)> row_ends;
  std::function<void(size_t index, const Tensor& gradient, int64_t end)> rows_ready;
  std::function<bool(size_t index)> takes_slices;
  // Whether ready() takes sources[index]'s gradient for good (unset: none's): the tape
  // then lets go of it at once, and gradient() returns it undefined, so that the
  // consumer's reduction of it is all that stays in memory.
  std::function<bool(size_t index)> takes_ownership;
};

// What a backward function may stream one input's gradient to (BackwardContext::row_stream).
class RowStream {
 public:
  RowStream(const GradientStreaming& streaming, size_t source, std::span<const int64_t> row_ends)
      : streaming_(&streaming), source_(source), row_ends_(row_ends) {}
  // Where blocks should end: ascending, the last equal to the gradient's leading dimension.
  std::span<const int64_t> row_ends() const { return row_ends_; }
  // Rows [0, end) of `gradient` are final. `gradient` must be the tensor the backward
  // function then returns for this input, and must not change after this call.
  void rows_ready(const Tensor& gradient, int64_t end) const { streaming_->rows_ready(source_, gradient, end); }

 private:
  const GradientStreaming* streaming_;
  size_t source_;
  std::span<const int64_t> row_ends_;
};

// What GradientTape::gradient offers one backward function beyond returning dense
// gradients, by input: a row stream, and a sink for IndexedSlices. Made by the tape for
// one call of one record's backward function and passed to it; valid only during it.
class BackwardContext {
 public:
  BackwardContext(std::span<const RowStream* const> streams, std::span<std::vector<IndexedSlices>* const> sinks)
      : streams_(streams), sinks_(sinks) {}

  // Where the gradient of `input` may be streamed in row blocks, or nullptr. Set only for
  // an input that is a streamed source whose whole gradient this record produces (its only
  // use on the tape); a backward function may ignore it.
  const RowStream* row_stream(size_t input) const { return input < streams_.size() ? streams_[input] : nullptr; }
  // Whether the gradient of `input` may be given as IndexedSlices through
  // add_indexed_slices() rather than returned dense. True only when the caller of
  // gradient() asked for sparse gradients and `input` is one of its sources.
  bool accepts_indexed_slices(size_t input) const { return input < sinks_.size() && sinks_[input] != nullptr; }
  // Gives this record's gradient of `input` as slices; the backward function then returns
  // an undefined tensor for it. REQUIRES: accepts_indexed_slices(input).
  void add_indexed_slices(size_t input, IndexedSlices slices) const;

 private:
  std::span<const RowStream* const> streams_;
  std::span<std::vector<IndexedSlices>* const> sinks_;
};

// Computes the gradients of a record's inputs from those of its outputs. Receives one
// gradient per output (undefined where no gradient reached that output) and returns one
// per input (undefined where the input gets none). Runs with recording off. record()
// also takes functions of grad_outputs alone, for backward functions that stream nothing.
using BackwardFn =
    std::function<std::vector<Tensor>(std::span<const Tensor> grad_outputs, const BackwardContext& context)>;

class GradientTape {
 public:
  // A persistent tape keeps its records, so gradient() may be called more than once; a
  // non-persistent one frees each record as the backward pass consumes it (TF's rule).
  explicit GradientTape(bool persistent = false);
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  // Tracks `tensor` (e.g. an input) as a source of gradients from now on.
  void watch(const Tensor& tensor);
  // Ends recording but keeps the records, as a Python `with tf.GradientTape()` block ends
  // before tape.gradient() is called: the thread's previous tape records again. Call on the
  // thread that made the tape, while it is that thread's innermost tape (ValueError
  // otherwise); a second call does nothing. Destroying a stopped tape leaves the thread's
  // current tape alone, so it may happen on any thread.
  void stop_recording();
  bool recording() const { return recording_; }

  // d target / d source for each source, summed over every path. An undefined tensor
  // where a source is not connected to target (Keras's None). `output_gradient`
  // defaults to ones shaped like target. Throws Error if a non-persistent tape is asked
  // twice, or if output_gradient's shape differs from target's.
  std::vector<Tensor> gradient(const Tensor& target, std::span<const Tensor> sources,
                               const Tensor& output_gradient = Tensor());
  // The same, calling `on_ready` for each source as its gradient becomes final (each
  // source exactly once, in the order the backward pass finishes them).
  std::vector<Tensor> gradient(const Tensor& target, std::span<const Tensor> sources, const GradientReadyFn& on_ready,
                               const Tensor& output_gradient = Tensor());
  // The same, also offering sources' gradients in row blocks (GradientStreaming).
  std::vector<Tensor> gradient(const Tensor& target, std::span<const Tensor> sources,
                               const GradientStreaming& streaming, const Tensor& output_gradient = Tensor());
  // The same, asking for sparse gradients: a source whose every use on the tape gave its
  // gradient as IndexedSlices (a row gather: an Embedding lookup, ops::take along axis 0
  // of a float32 table) gets them in (*sparse)[i], and an undefined tensor in the
  // result. This spares a table-sized zero-fill and scatter-add per step. Other sources
  // get dense gradients as above. `sparse` is resized to sources.size().
  std::vector<Tensor> gradient(const Tensor& target, std::span<const Tensor> sources,
                               std::vector<IndexedSlices>* sparse, const Tensor& output_gradient = Tensor());
  // Both: streaming for the dense gradients, slices for the sources it lets take them.
  std::vector<Tensor> gradient(const Tensor& target, std::span<const Tensor> sources,
                               const GradientStreaming& streaming, std::vector<IndexedSlices>* sparse,
                               const Tensor& output_gradient = Tensor());
  std::vector<Tensor> gradient(const Tensor& target, std::initializer_list<Tensor> sources,
                               const Tensor& output_gradient = Tensor()) {
    return gradient(target, std::span<const Tensor>(sources.begin(), sources.size()), output_gradient);
  }

  // Number of records held (for tests and memory accounting).
  size_t num_records() const { return records_.size(); }

  // Internal: used by record() below.
  int32_t slot_of(const Tensor& tensor);
  void add_record(const char* op, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                  BackwardFn backward);

 private:
  std::vector<Tensor> compute_gradients(const Tensor& target, std::span<const Tensor> sources,
                                        const GradientStreaming& streaming, std::vector<IndexedSlices>* sparse,
                                        const Tensor& output_gradient);

  struct Record {
    const char* op;
    std::vector<int32_t> input_slots;   // -1: untracked input
    std::vector<int32_t> output_slots;
    BackwardFn backward;
  };

  uint64_t id_;
  bool persistent_;
  bool recording_ = true;
  bool used_ = false;
  int32_t num_slots_ = 0;
  std::vector<Record> records_;
  // Slots of tracked tensors this tape did not produce: watched tensors and variables.
  std::unordered_map<const TensorImpl*, int32_t> leaf_slots_;
  std::vector<Tensor> leaf_keepalive_;  // keeps leaf impl addresses from being reused
  GradientTape* previous_;
};

// The innermost tape of this thread that is recording, or nullptr.
GradientTape* current_tape();
// Whether an op run now on this thread would be recorded.
inline bool is_recording() { return current_tape() != nullptr; }

// Whether the current tape tracks `tensor` (PyTorch's needs_input_grad). Call it from a
// record() factory so a backward function skips gradients nobody reads (the data
// batch's gradient in a layer's matmul).
inline bool needs_gradient(const Tensor& tensor) {
  GradientTape* tape = current_tape();
  return tape != nullptr && tensor.defined() && is_floating(tensor.dtype()) && tape->slot_of(tensor) >= 0;
}

// Suspends recording on this thread for its lifetime (tf.stop_recording / no_grad).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  GradientTape* saved_;
};

// Records an op on the current tape when one is recording and any floating input is
// tracked. `make_backward` is called only then, so ops pay nothing when not recorded;
// it returns the BackwardFn (typically a lambda capturing what backward needs).
//
//   record("multiply", {a, b}, {out}, [&] { return [a, b](std::span<const Tensor> g) {...}; });
// `op` must be a string literal (it is kept, not copied).
template <class MakeBackward>
void record(const char* op, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
            MakeBackward&& make_backward) {
  GradientTape* tape = current_tape();
  if (tape == nullptr) return;
  bool any_tracked = false;
  for (const Tensor& t : inputs) {
    if (t.defined() && is_floating(t.dtype()) && tape->slot_of(t) >= 0) any_tracked = true;
  }
  if (!any_tracked) return;
  auto backward = make_backward();
  if constexpr (std::is_invocable_v<decltype(backward)&, std::span<const Tensor>, const BackwardContext&>) {
    tape->add_record(op, inputs, outputs, BackwardFn(std::move(backward)));
  } else {
    tape->add_record(op, inputs, outputs,
                     [f = std::move(backward)](std::span<const Tensor> g, const BackwardContext&) mutable { return f(g); });
  }
}

template <class MakeBackward>
void record(const char* op, std::initializer_list<Tensor> inputs, std::initializer_list<Tensor> outputs,
            MakeBackward&& make_backward) {
  record(op, std::span<const Tensor>(inputs.begin(), inputs.size()),
         std::span<const Tensor>(outputs.begin(), outputs.size()), std::forward<MakeBackward>(make_backward));
}

}  // namespace chorus::autograd
