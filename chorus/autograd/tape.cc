#include "chorus/autograd/tape.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstring>

#include "chorus/core/creation.h"
#include "chorus/core/sharding.h"
#include "chorus/jit/tracer.h"
#include "chorus/profiler/profiler.h"

namespace chorus::autograd {
namespace {

// The recording switch: the tape that records ops made on this thread.
thread_local GradientTape* t_current_tape = nullptr;
std::atomic<uint64_t> g_next_tape_id{1};  // ids are never reused, so stale slots never match

Tensor add_gradients(const char* op, const Tensor& a, const Tensor& b);

// The sum of two gradients of a tensor sharded over a model-parallel mesh: both are blocks
// laid out alike (every sharding rule hands back blocks), added blockwise.
Tensor add_sharded_gradients(const char* op, const Tensor& a, const Tensor& b) {
  const Sharding* sa = a.impl()->sharding.get();
  const Sharding* sb = b.impl()->sharding.get();
  if (sa == nullptr || sb == nullptr || sa->axis != sb->axis || sa->dim != sb->dim ||
      sa->global_shape != sb->global_shape) {
    throw_error("{} backward: gradients of one sharded tensor are laid out differently", op);
  }
  const Sharding layout = *sa;
  Tensor sum;
  {
    LocalShardScope blocks;
    sum = add_gradients(op, shard_block(a), shard_block(b));
  }
  return sharded_tensor(sum, layout);
}

// a + b into a new tensor (gradients may alias other tensors, so never in place).
Tensor add_gradients(const char* op, const Tensor& a, const Tensor& b) {
  if (a.impl()->sharding != nullptr || b.impl()->sharding != nullptr) {
    if (!sharding_detail::local_view()) return add_sharded_gradients(op, a, b);
  }
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) {
    throw_error("{} backward: gradients of one tensor disagree: shape {} {} vs {} {}", op, a.shape().to_string(),
                dtype_name(a.dtype()), b.shape().to_string(), dtype_name(b.dtype()));
  }
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  jit::launch_binary("add_gradients", backend::cpu::BinaryOp::kAdd, a, b, out);
  return out;
}

}  // namespace

GradientTape* current_tape() { return t_current_tape; }

void BackwardContext::add_indexed_slices(size_t input, IndexedSlices slices) const {
  assert(accepts_indexed_slices(input));
  sinks_[input]->push_back(std::move(slices));
}

GradientTape::GradientTape(bool persistent)
    : id_(g_next_tape_id.fetch_add(1, std::memory_order_relaxed)), persistent_(persistent), previous_(t_current_tape) {
  t_current_tape = this;
}

GradientTape::~GradientTape() {
  if (recording_) t_current_tape = previous_;
}

void GradientTape::stop_recording() {
  if (!recording_) return;
  if (t_current_tape != this) {
    throw_error<ValueError>("GradientTape::stop_recording: the tape is not this thread's innermost recording tape "
                            "(stop the tapes made after it first, on the thread that made them)");
  }
  t_current_tape = previous_;
  recording_ = false;
}

void GradientTape::watch(const Tensor& tensor) {
  if (!is_floating(tensor.dtype())) {
    throw_error<DTypeError>("GradientTape::watch: only floating tensors have gradients, got dtype {}",
                            dtype_name(tensor.dtype()));
  }
  if (slot_of(tensor) >= 0) return;
  leaf_slots_.emplace(tensor.impl(), num_slots_++);
  leaf_keepalive_.push_back(tensor);
}

int32_t GradientTape::slot_of(const Tensor& tensor) {
  const TensorImpl* impl = tensor.impl();
  if (impl->autograd.tape_id == id_) return impl->autograd.slot;
  if (!impl->autograd.trainable && leaf_slots_.empty()) return -1;
  auto it = leaf_slots_.find(impl);
  if (it != leaf_slots_.end()) return it->second;
  if (!impl->autograd.trainable) return -1;
  leaf_slots_.emplace(impl, num_slots_);
  leaf_keepalive_.push_back(tensor);
  return num_slots_++;
}

void GradientTape::add_record(const char* op, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                              BackwardFn backward) {
  Record record{op, {}, {}, std::move(backward)};
  record.input_slots.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    record.input_slots.push_back(t.defined() && is_floating(t.dtype()) ? slot_of(t) : -1);
  }
  record.output_slots.reserve(outputs.size());
  for (const Tensor& t : outputs) {
    // Outputs are fresh tensors of this thread, so writing their slot cannot race.
    t.impl()->autograd.tape_id = id_;
    t.impl()->autograd.slot = num_slots_;
    record.output_slots.push_back(num_slots_++);
  }
  records_.push_back(std::move(record));
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, std::span<const Tensor> sources,
                                           const Tensor& output_gradient) {
  return compute_gradients(target, sources, GradientStreaming{}, nullptr, output_gradient);
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, std::span<const Tensor> sources,
                                           const GradientReadyFn& on_ready, const Tensor& output_gradient) {
  return compute_gradients(target, sources, GradientStreaming{.ready = on_ready}, nullptr, output_gradient);
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, std::span<const Tensor> sources,
                                           const GradientStreaming& streaming, const Tensor& output_gradient) {
  return compute_gradients(target, sources, streaming, nullptr, output_gradient);
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, std::span<const Tensor> sources,
                                           std::vector<IndexedSlices>* sparse, const Tensor& output_gradient) {
  return compute_gradients(target, sources, GradientStreaming{}, sparse, output_gradient);
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, std::span<const Tensor> sources,
                                           const GradientStreaming& streaming, std::vector<IndexedSlices>* sparse,
                                           const Tensor& output_gradient) {
  return compute_gradients(target, sources, streaming, sparse, output_gradient);
}

std::vector<Tensor> GradientTape::compute_gradients(const Tensor& target, std::span<const Tensor> sources,
                                                    const GradientStreaming& streaming,
                                                    std::vector<IndexedSlices>* sparse,
                                                    const Tensor& output_gradient) {
  const GradientReadyFn& on_ready = streaming.ready;
  if (used_ && !persistent_) {
    throw Error("GradientTape::gradient: a non-persistent tape can compute gradients only once; "
                "construct it with persistent=true to call gradient() again");
  }
  used_ = true;
  NoGradGuard no_grad;  // backward functions run ops that must not be recorded

  const int32_t target_slot = slot_of(target);
  std::vector<Tensor> grads(static_cast<size_t>(num_slots_));
  if (target_slot >= 0) {
    Tensor seed = output_gradient.defined() ? output_gradient : ones(target.shape(), target.dtype(), target.device());
    if (seed.shape() != target.shape()) {
      throw_error<ShapeError>("GradientTape::gradient: output_gradient has shape {}, but target has shape {}",
                              seed.shape().to_string(), target.shape().to_string());
    }
    grads[target_slot] = seed;
  }

  std::vector<int32_t> source_slots;
  source_slots.reserve(sources.size());
  for (const Tensor& source : sources) source_slots.push_back(source.defined() ? slot_of(source) : -1);
  // For sparse: the slices each source's slot has received, in backward order. Only
  // leaves take slices: a record's output must pass a dense gradient on to its inputs.
  std::vector<std::vector<IndexedSlices>> slices;
  std::vector<bool> takes_slices;
  if (sparse != nullptr) {
    slices.resize(static_cast<size_t>(num_slots_));
    takes_slices.resize(static_cast<size_t>(num_slots_), false);
    for (size_t i = 0; i < sources.size(); ++i) {
      if (source_slots[i] < 0 || sources[i].impl()->autograd.tape_id == id_) continue;
      if (!streaming.takes_slices || streaming.takes_slices(i)) takes_slices[source_slots[i]] = true;
    }
    sparse->assign(sources.size(), IndexedSlices());
  }
  // For on_ready: the sources whose gradient is final once record r has run backward,
  // i.e. whose first use (in execution order) is record r. Unused sources are final now.
  std::vector<std::vector<size_t>> final_after;
  if (on_ready) {
    std::unordered_map<int32_t, size_t> first_use;
    for (size_t r = records_.size(); r-- > 0;) {
      for (int32_t slot : records_[r].input_slots) {
        if (slot >= 0) first_use[slot] = r;
      }
    }
    final_after.resize(records_.size());
    for (size_t i = 0; i < sources.size(); ++i) {
      auto it = source_slots[i] >= 0 ? first_use.find(source_slots[i]) : first_use.end();
      if (it == first_use.end()) {
        on_ready(i, Tensor());
      } else {
        final_after[it->second].push_back(i);
      }
    }
  }

  // Records are in execution order, a topological order: walk it backwards.
  for (size_t r = records_.size(); r-- > 0;) {
    Record& record = records_[r];
    bool reached = false;
    std::vector<Tensor> grad_outputs;
    grad_outputs.reserve(record.output_slots.size());
    for (int32_t slot : record.output_slots) {
      grad_outputs.push_back(grads[slot]);
      reached = reached || grads[slot].defined();
    }
    if (reached) {
      // Offer row streams for the sources whose whole gradient this record produces.
      std::vector<RowStream> streams;
      std::vector<const RowStream*> stream_of;
      if (on_ready && streaming.row_ends && !final_after[r].empty()) {
        streams.reserve(final_after[r].size());
        for (size_t i : final_after[r]) {
          const int32_t slot = source_slots[i];
          const auto position = std::find(record.input_slots.begin(), record.input_slots.end(), slot);
          const std::span<const int64_t> ends = streaming.row_ends(i);
          if (grads[slot].defined() || ends.empty() || std::count(position, record.input_slots.end(), slot) != 1) {
            continue;
          }
          stream_of.resize(record.input_slots.size(), nullptr);
          const auto input = static_cast<size_t>(position - record.input_slots.begin());
          stream_of[input] = &streams.emplace_back(streaming, i, ends);
        }
      }
      std::vector<std::vector<IndexedSlices>*> sink_of;
      if (sparse != nullptr) {
        for (size_t i = 0; i < record.input_slots.size(); ++i) {
          const int32_t slot = record.input_slots[i];
          if (slot < 0 || !takes_slices[static_cast<size_t>(slot)]) continue;
          sink_of.resize(record.input_slots.size(), nullptr);
          sink_of[i] = &slices[static_cast<size_t>(slot)];
        }
      }
      std::vector<Tensor> grad_inputs;
      {
        profiler::Scope event("backward", record.op);
        grad_inputs = record.backward(grad_outputs, BackwardContext(stream_of, sink_of));
      }
      for (size_t i = 0; i < record.input_slots.size(); ++i) {
        const int32_t slot = record.input_slots[i];
        if (slot < 0) continue;
        const bool dense_in = i < grad_inputs.size() && grad_inputs[i].defined();
        if (sparse != nullptr && !slices[static_cast<size_t>(slot)].empty() && (grads[slot].defined() || dense_in)) {
          // Used densely too: the gradient is dense, its parts summed in backward order.
          std::vector<IndexedSlices>& pending = slices[static_cast<size_t>(slot)];
          const Tensor folded = IndexedSlices::concatenate(pending).to_dense();
          pending.clear();
          grads[slot] = grads[slot].defined() ? add_gradients(record.op, grads[slot], folded) : folded;
        }
        if (!dense_in) continue;
        grads[slot] = grads[slot].defined() ? add_gradients(record.op, grads[slot], grad_inputs[i]) : grad_inputs[i];
      }
    }
    if (!persistent_) record.backward = nullptr;  // frees the saved tensors now
    if (on_ready) {
      for (size_t i : final_after[r]) {
        on_ready(i, grads[source_slots[i]]);
        if (streaming.takes_ownership && streaming.takes_ownership(i)) grads[source_slots[i]] = Tensor();
      }
    }
  }
  if (!persistent_) records_.clear();

  std::vector<Tensor> result;
  result.reserve(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    const int32_t slot = source_slots[i];
    result.push_back(slot >= 0 && static_cast<size_t>(slot) < grads.size() ? grads[slot] : Tensor());
    // A source whose every use gave slices (any dense use folded them in above).
    if (sparse != nullptr && slot >= 0 && !slices[static_cast<size_t>(slot)].empty()) {
      (*sparse)[i] = IndexedSlices::concatenate(slices[static_cast<size_t>(slot)]);
    }
  }
  return result;
}

NoGradGuard::NoGradGuard() : saved_(t_current_tape) { t_current_tape = nullptr; }
NoGradGuard::~NoGradGuard() { t_current_tape = saved_; }

}  // namespace chorus::autograd
