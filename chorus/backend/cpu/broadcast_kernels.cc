#include "chorus/backend/cpu/broadcast_kernels.h"

#include <algorithm>
#include <cstring>

#include "chorus/backend/cpu/reduce_kernels_isa.h"

namespace chorus::backend::cpu {
namespace {

constexpr int64_t kBroadcastGrain = 32768;  // elements per task

template <class T>
void fill(void* dst, const void* value, int64_t n) {
  T v;
  std::memcpy(&v, value, sizeof(T));
  T* d = static_cast<T*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = v;
}

}  // namespace

BroadcastWalk::BroadcastWalk(const Shape& full, const Shape& kept) {
  // Merge adjacent axes of `full` that broadcast alike; axes of size 1 take no part.
  int64_t size[kMaxRank];
  bool broadcast[kMaxRank];
  int n = 0;
  const int lead = full.rank() - kept.rank();
  for (int d = 0; d < full.rank(); ++d) {
    if (full[d] == 1) continue;
    const bool b = d < lead || kept[d - lead] == 1;
    if (n > 0 && broadcast[n - 1] == b) {
      size[n - 1] *= full[d];
    } else {
      size[n] = full[d];
      broadcast[n] = b;
      ++n;
    }
  }
  if (n == 0) return;  // one element
  run_ = size[n - 1];
  step_ = broadcast[n - 1] ? 0 : 1;
  int64_t kept_stride = broadcast[n - 1] ? 1 : run_;
  groups_ = n - 1;
  for (int g = n - 2; g >= 0; --g) {
    sizes_[g] = size[g];
    strides_[g] = broadcast[g] ? 0 : kept_stride;
    if (!broadcast[g]) kept_stride *= size[g];
    rows_ *= size[g];
  }
}

void broadcast_copy(const void* src, const Shape& kept, void* dst, const Shape& full, size_t elem_size) {
  const BroadcastWalk walk(full, kept);
  if (elem_size == 4 && walk.kept_step() == 0 && walk.rows() == kept.numel() && walk.run() > 1) {
    // Each run repeats its own kept element, in order ((rows, 1) -> (rows, n)): one
    // vectorised splat per row instead of a callback per run.
    const auto fn = reduce_kernel_table(active_isa()).broadcast_rows32;
    const auto* s = static_cast<const uint32_t*>(src);
    auto* d = static_cast<uint32_t*>(dst);
    const int64_t run = walk.run();
    parallel_for(walk.rows(), std::max<int64_t>(1, kBroadcastGrain / run),
                 [&](int64_t b, int64_t e) { fn(s + b, d + b * run, e - b, run); });
    return;
  }
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  const int64_t es = static_cast<int64_t>(elem_size);
  for_each_broadcast_run(full, kept, kBroadcastGrain, [&](int64_t fo, int64_t ko, int64_t len, int64_t step) {
    if (step == 1) {
      std::memcpy(d + fo * es, s + ko * es, static_cast<size_t>(len * es));
      return;
    }
    switch (elem_size) {
      case 1: std::memset(d + fo, s[ko], static_cast<size_t>(len)); break;
      case 2: fill<uint16_t>(d + fo * es, s + ko * es, len); break;
      case 4: fill<uint32_t>(d + fo * es, s + ko * es, len); break;
      default: fill<uint64_t>(d + fo * es, s + ko * es, len); break;
    }
  });
}

void broadcast_scale(const float* src, const Shape& kept, float* dst, const Shape& full, float scale) {
  for_each_broadcast_run(full, kept, kBroadcastGrain, [&](int64_t fo, int64_t ko, int64_t len, int64_t step) {
    float* d = dst + fo;
    const float* s = src + ko;
    if (step == 1) {
      for (int64_t i = 0; i < len; ++i) d[i] = s[i] * scale;
    } else {
      const float v = s[0] * scale;
      for (int64_t i = 0; i < len; ++i) d[i] = v;
    }
  });
}

}  // namespace chorus::backend::cpu
