#include "chorus/distribute/gradient_reducer.h"

#include <algorithm>

#include "chorus/core/error.h"

namespace chorus::distribute {

GradientReducer::GradientReducer(int max_replicas, int64_t bucket_bytes)
    : bucket_floats_(std::max<int64_t>(1, bucket_bytes / static_cast<int64_t>(sizeof(float)))),
      replicas_(static_cast<size_t>(max_replicas)) {}

void GradientReducer::make_plan(std::span<const autograd::Variable> variables) {
  slots_.resize(variables.size());
  for (size_t k = variables.size(); k-- > 0;) {
    const autograd::Variable& v = variables[k];
    if (v.dtype() != kFloat32) {
      throw_error<DTypeError>("data parallelism: variable '{}' is {}; only float32 variables are supported", v.path(),
                              dtype_name(v.dtype()));
    }
    const int64_t n = v.value().numel();
    if (buckets_.empty() || (buckets_.back().numel > 0 && buckets_.back().numel + n > bucket_floats_)) {
      buckets_.emplace_back();
    }
    slots_[k] = {v.value().impl(), n, buckets_.size() - 1, buckets_.back().numel};
    buckets_.back().numel += n;
    buckets_.back().slots += 1;
  }
  planned_ = true;
}

void GradientReducer::begin(int replica, std::span<const autograd::Variable> variables, float scale,
                            Communicator* local, Communicator* workers) {
  {
    std::lock_guard lock(plan_mutex_);
    if (!planned_) make_plan(variables);
  }
  bool same = variables.size() == slots_.size();
  for (size_t i = 0; same && i < variables.size(); ++i) same = variables[i].value().impl() == slots_[i].variable;
  if (!same) {
    throw_error<ValueError>(
        "data parallelism: apply_gradients got {} variables that are not the model's {} trainable weights in "
        "order; under a distribution, pass the gradients of exactly model.trainable_weights()",
        variables.size(), slots_.size());
  }
  Replica& r = replicas_[static_cast<size_t>(replica)];
  if (r.buffers.empty()) {
    for (const Bucket& b : buckets_) r.buffers.push_back(Tensor::empty({b.numel}, kFloat32));
  }
  r.packed_in.assign(buckets_.size(), 0);
  r.packed.assign(slots_.size(), false);
  r.source.assign(slots_.size(), nullptr);
  r.work.clear();
  r.work.resize(buckets_.size());
  r.cross_work.clear();
  r.cross_work.resize(buckets_.size());
  r.launched = 0;
  r.scale = scale;
  r.local = local;
  r.workers = workers;
}

void GradientReducer::pack(Replica& r, size_t index, const Tensor& gradient) {
  const Slot& slot = slots_[index];
  if (!r.packed[index]) ++r.packed_in[slot.bucket];
  r.packed[index] = true;
  r.source[index] = gradient.defined() ? gradient.impl() : nullptr;
  float* out = r.buffers[slot.bucket].data<float>() + slot.offset;
  if (!gradient.defined()) {
    std::fill(out, out + slot.numel, 0.0f);
    return;
  }
  if (gradient.dtype() != kFloat32 || gradient.numel() != slot.numel) {
    throw_error<ShapeError>("data parallelism: gradient {} of dtype {} does not match its variable ({} elements)",
                            gradient.shape().to_string(), dtype_name(gradient.dtype()), slot.numel);
  }
  const float* in = gradient.data<float>();
  const float scale = r.scale;
  for (int64_t i = 0; i < slot.numel; ++i) out[i] = in[i] * scale;
}

void GradientReducer::launch_ready(Replica& r, bool finishing) {
  while (r.launched < buckets_.size() && r.packed_in[r.launched] == buckets_[r.launched].slots) {
    const size_t b = r.launched;
    // Across workers the last bucket waits for finish(): backward has nothing left to
    // overlap it with, and a blocking all-reduce runs on this thread, without a hand-off.
    if (r.workers != nullptr && b + 1 == buckets_.size() && !finishing) return;
    ++r.launched;
    r.work[b] = r.local->all_reduce_async(r.buffers[b]);
    if (r.workers == nullptr) continue;
    // Multi-worker: every replica does its share of the local sum now, so replica 0 can
    // hand the bucket to the workers' all-reduce while backward goes on.
    r.work[b]->wait();
    if (&r != &replicas_[0]) continue;
    if (finishing) {
      r.workers->all_reduce(r.buffers[b]);
    } else {
      r.cross_work[b] = r.workers->all_reduce_async(r.buffers[b]);
    }
  }
}

void GradientReducer::ready(int replica, size_t index, const Tensor& gradient) {
  Replica& r = replicas_[static_cast<size_t>(replica)];
  pack(r, index, gradient);
  launch_ready(r, /*finishing=*/false);
}

std::vector<Tensor> GradientReducer::finish(int replica, std::span<const Tensor> grads,
                                            std::span<const autograd::Variable> variables) {
  Replica& r = replicas_[static_cast<size_t>(replica)];
  for (size_t i = 0; i < grads.size(); ++i) {
    const TensorImpl* given = grads[i].defined() ? grads[i].impl() : nullptr;
    if (r.packed[i] && r.source[i] == given) continue;  // streamed by the tape
    if (r.packed[i] && slots_[i].bucket < r.launched) {
      throw_error<ValueError>(
          "data parallelism: the gradient of '{}' changed after the tape streamed it for reduction; modify "
          "gradients in a custom train_step without GradientTape streaming",
          variables[i].path());
    }
    pack(r, i, grads[i]);
  }
  launch_ready(r, /*finishing=*/true);
  for (auto& w : r.work) w->wait();
  for (auto& w : r.cross_work) {
    if (w) w->wait();
  }
  std::vector<Tensor> reduced(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (r.source[i] == nullptr) continue;
    const Slot& slot = slots_[i];
    reduced[i] = r.buffers[slot.bucket].first_axis_slice(slot.offset, slot.offset + slot.numel).view(variables[i].shape());
  }
  return reduced;
}

}  // namespace chorus::distribute
