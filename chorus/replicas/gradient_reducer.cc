#include "chorus/replicas/gradient_reducer.h"

#include <algorithm>

#include "chorus/core/env.h"
#include "chorus/core/error.h"

namespace chorus::replicas {

int64_t gradient_bucket_bytes_from_env() {
  return env_integer("CHORUS_GRADIENT_BUCKET_BYTES", "a number of bytes >= 4", 4)
      .value_or(GradientReducer::kDefaultBucketBytes);
}

GradientReducer::GradientReducer(int max_replicas, int64_t bucket_bytes)
    : bucket_floats_(std::max<int64_t>(1, bucket_bytes / static_cast<int64_t>(sizeof(float)))),
      replicas_(static_cast<size_t>(max_replicas)) {}

std::vector<int64_t> GradientReducer::plan_buckets(std::span<const autograd::Variable> variables,
                                                   int64_t bucket_bytes) {
  GradientReducer reducer(1, bucket_bytes);
  reducer.make_plan(variables);
  std::vector<int64_t> sizes;
  for (const Bucket& b : reducer.buckets_) sizes.push_back(b.numel);
  return sizes;
}

void GradientReducer::make_plan(std::span<const autograd::Variable> variables) {
  // Blocks of at most half a bucket: the first ones reduce while the matmul writes the
  // rest. Smaller blocks leave less for the end of backward but cost a message each: on
  // two workers over loopback, quarters made the MNIST MLP's step slower than halves.
  const int64_t block_floats = std::max<int64_t>(1, bucket_floats_ / 2);
  bool closed = true;  // the last bucket takes no more pieces
  slots_.resize(variables.size());
  for (size_t k = variables.size(); k-- > 0;) {
    const autograd::Variable& v = variables[k];
    if (v.dtype() != kFloat32) {
      throw_error<DTypeError>("data parallelism: variable '{}' is {}; only float32 variables are supported", v.path(),
                              dtype_name(v.dtype()));
    }
    const Shape& shape = v.shape();
    const int64_t numel = shape.numel();
    // Exchanged as rows instead (a table split across workers always: its keepers update it).
    if (v.row_shard() || (v.sparse_gradients() && shape.rank() > 0 && shape[0] >= kRowExchangeMinRows)) {
      slots_[k] = {v.value().impl(), numel, pieces_.size(), 0, {}};
      continue;
    }
    const int64_t rows = shape.rank() > 0 ? shape[0] : 1;
    const int64_t row_floats = rows > 0 ? numel / rows : 0;
    const bool split = shape.rank() >= 2 && numel > block_floats;
    const int64_t blocks = split ? std::min(rows, (numel + block_floats - 1) / block_floats) : 1;
    Slot& slot = slots_[k];
    slot = {v.value().impl(), numel, pieces_.size(), static_cast<size_t>(blocks), {}};
    for (int64_t j = 0; j < blocks; ++j) {
      const int64_t row_begin = rows * j / blocks, row_end = rows * (j + 1) / blocks;
      const int64_t floats = (row_end - row_begin) * row_floats;
      if (closed || split || buckets_.back().numel + floats > bucket_floats_) {
        const int64_t start = buckets_.empty() ? 0 : buckets_.back().start + buckets_.back().numel;
        buckets_.push_back({start, 0, 0});
      }
      closed = split;
      Bucket& bucket = buckets_.back();
      pieces_.push_back(
          {row_begin * row_floats, row_end * row_floats, buckets_.size() - 1, bucket.start + bucket.numel});
      bucket.numel += floats;
      bucket.pieces += 1;
      if (shape.rank() > 0) slot.row_ends.push_back(row_end);
    }
  }
  planned_ = true;
}

void GradientReducer::begin(int replica, std::span<const autograd::Variable> variables, float scale,
                            comm::Communicator* local, comm::Communicator* workers) {
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
  if (!r.storage.defined()) {
    r.storage = Tensor::empty({buckets_.empty() ? 0 : buckets_.back().start + buckets_.back().numel}, kFloat32);
    for (const Bucket& b : buckets_) r.buffers.push_back(r.storage.first_axis_slice(b.start, b.start + b.numel));
  }
  r.packed_in.assign(buckets_.size(), 0);
  r.packed.assign(pieces_.size(), false);
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

autograd::GradientStreaming GradientReducer::streaming(int replica) {
  return {.ready = [this, replica](size_t index, const Tensor& gradient) { ready(replica, index, gradient); },
          .row_ends = [this](size_t index) { return row_ends(index); },
          .rows_ready = [this, replica](size_t index, const Tensor& gradient,
                                        int64_t end) { rows_ready(replica, index, gradient, end); },
          .takes_slices = [this](size_t index) { return sparse(index); }};
}

void GradientReducer::pack(Replica& r, size_t index, const Tensor& gradient, size_t count, bool repack) {
  const Slot& slot = slots_[index];
  if (gradient.defined() && (gradient.dtype() != kFloat32 || gradient.numel() != slot.numel)) {
    throw_error<ShapeError>("data parallelism: gradient {} of dtype {} does not match its variable ({} elements)",
                            gradient.shape().to_string(), dtype_name(gradient.dtype()), slot.numel);
  }
  const float* in = gradient.defined() ? gradient.data<float>() : nullptr;
  const float scale = r.scale;
  for (size_t p = slot.first_piece; p < slot.first_piece + count; ++p) {
    if (r.packed[p] && !repack) continue;
    const Piece& piece = pieces_[p];
    if (!r.packed[p]) ++r.packed_in[piece.bucket];
    r.packed[p] = true;
    float* out = r.storage.data<float>() + piece.offset;
    if (in == nullptr) {
      std::fill(out, out + (piece.end - piece.begin), 0.0f);
    } else {
      for (int64_t i = piece.begin; i < piece.end; ++i) *out++ = in[i] * scale;
    }
  }
}

void GradientReducer::launch_ready(Replica& r, bool finishing) {
  while (r.launched < buckets_.size() && r.packed_in[r.launched] == buckets_[r.launched].pieces) {
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
  if (sparse(index)) return;
  Replica& r = replicas_[static_cast<size_t>(replica)];
  const void* given = gradient.defined() ? gradient.raw_data() : nullptr;
  if (r.source[index] != nullptr && r.source[index] != given) {
    throw_error("data parallelism: the tape finished the gradient of variable {} with another tensor than the one "
                "it streamed in row blocks",
                index);
  }
  r.source[index] = given;
  pack(r, index, gradient, slots_[index].pieces);
  launch_ready(r, /*finishing=*/false);
}

void GradientReducer::rows_ready(int replica, size_t index, const Tensor& gradient, int64_t end) {
  Replica& r = replicas_[static_cast<size_t>(replica)];
  const Slot& slot = slots_[index];
  r.source[index] = gradient.raw_data();
  const auto count = std::upper_bound(slot.row_ends.begin(), slot.row_ends.end(), end) - slot.row_ends.begin();
  pack(r, index, gradient, static_cast<size_t>(count));
  launch_ready(r, /*finishing=*/false);
}

std::vector<Tensor> GradientReducer::finish(int replica, std::span<const Tensor> grads,
                                            std::span<const autograd::Variable> variables) {
  Replica& r = replicas_[static_cast<size_t>(replica)];
  for (size_t i = 0; i < grads.size(); ++i) {
    const Slot& slot = slots_[i];
    if (sparse(i)) continue;
    const auto first = r.packed.begin() + static_cast<std::ptrdiff_t>(slot.first_piece);
    const auto last = first + static_cast<std::ptrdiff_t>(slot.pieces);
    const void* given = grads[i].defined() ? grads[i].raw_data() : nullptr;
    if (std::all_of(first, last, [](bool p) { return p; }) && r.source[i] == given) continue;  // streamed by the tape
    for (size_t p = slot.first_piece; p < slot.first_piece + slot.pieces; ++p) {
      if (r.packed[p] && pieces_[p].bucket < r.launched) {
        throw_error<ValueError>(
            "data parallelism: the gradient of '{}' changed after the tape streamed it for reduction; modify "
            "gradients in a custom train_step without GradientTape streaming",
            variables[i].path());
      }
    }
    r.source[i] = given;
    pack(r, i, grads[i], slot.pieces, /*repack=*/true);
  }
  launch_ready(r, /*finishing=*/true);
  for (auto& w : r.work) w->wait();
  for (auto& w : r.cross_work) {
    if (w) w->wait();
  }
  std::vector<Tensor> reduced(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (r.source[i] == nullptr || sparse(i)) continue;
    const Slot& slot = slots_[i];
    const int64_t offset = pieces_[slot.first_piece].offset;
    reduced[i] = r.storage.first_axis_slice(offset, offset + slot.numel).view(variables[i].shape());
  }
  return reduced;
}

}  // namespace chorus::replicas
