// Walking a contiguous array together with a smaller one broadcast to it (NumPy rules,
// right-aligned): the loop behind broadcast_to and the backward passes of reductions.
// Adjacent axes that broadcast alike are merged, so the walk is a series of contiguous
// runs. Thread-safe: no shared state; runs are handed to threads through parallel_for.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/core/shape.h"

namespace chorus::backend::cpu {

// The runs of `full` and where each starts in `kept`.
// REQUIRES: kept.rank() <= full.rank(); every dim of kept (right-aligned) is 1 or equal
// to full's.
class BroadcastWalk {
 public:
  BroadcastWalk(const Shape& full, const Shape& kept);

  // Length of each contiguous run of `full` (the merged innermost axes).
  int64_t run() const { return run_; }
  // 1 if `kept` advances along a run too, 0 if a run reads one kept element.
  int64_t kept_step() const { return step_; }
  // Number of runs.
  int64_t rows() const { return rows_; }
  // Offset in `kept` of the first element of run `row`.
  int64_t kept_offset(int64_t row) const {
    int64_t offset = 0;
    for (int g = groups_ - 1; g >= 0; --g) {
      offset += (row % sizes_[g]) * strides_[g];
      row /= sizes_[g];
    }
    return offset;
  }

  // The kept offsets of consecutive runs, one division-free step per run (a run of a
  // (rows, n) <- (rows, 1) broadcast is only n long, so kept_offset's divisions showed).
  class Cursor {
   public:
    Cursor(const BroadcastWalk& walk, int64_t row) : walk_(&walk) {
      for (int g = walk.groups_ - 1; g >= 0; --g) {
        digit_[g] = row % walk.sizes_[g];
        offset_ += digit_[g] * walk.strides_[g];
        row /= walk.sizes_[g];
      }
    }
    int64_t offset() const { return offset_; }
    void next() {
      for (int g = walk_->groups_ - 1; g >= 0; --g) {
        offset_ += walk_->strides_[g];
        if (++digit_[g] < walk_->sizes_[g]) return;
        offset_ -= digit_[g] * walk_->strides_[g];
        digit_[g] = 0;
      }
    }

   private:
    const BroadcastWalk* walk_;  // borrowed; outlives the cursor
    int64_t digit_[kMaxRank] = {};
    int64_t offset_ = 0;
  };

 private:
  int groups_ = 0;  // merged outer axes
  int64_t sizes_[kMaxRank] = {};
  int64_t strides_[kMaxRank] = {};  // in `kept`; 0 on broadcast axes
  int64_t run_ = 1, step_ = 0, rows_ = 1;
};

// Calls fn(full_offset, kept_offset, len, kept_step) for runs that together cover `full`
// once: element full_offset + i pairs with kept element kept_offset + i * kept_step for
// i < len. Runs are split across threads in tasks of about `grain` elements.
template <class Fn>
void for_each_broadcast_run(const Shape& full, const Shape& kept, int64_t grain, Fn&& fn) {
  const BroadcastWalk walk(full, kept);
  const int64_t run = walk.run(), step = walk.kept_step();
  if (run == 0) return;
  parallel_for(walk.rows() * run, grain, [&](int64_t begin, int64_t end) {
    int64_t col = begin % run;
    BroadcastWalk::Cursor cursor(walk, begin / run);
    for (int64_t pos = begin; pos < end; cursor.next(), col = 0) {
      const int64_t len = std::min(run - col, end - pos);
      fn(pos, cursor.offset() + col * step, len, step);
      pos += len;
    }
  });
}

// dst (shape `full`) = src (shape `kept`) broadcast; elements of elem_size bytes.
// REQUIRES: as for BroadcastWalk; elem_size in {1, 2, 4, 8}; no overlap.
void broadcast_copy(const void* src, const Shape& kept, void* dst, const Shape& full, size_t elem_size);

// dst (shape `full`) = src (shape `kept`) broadcast and multiplied by `scale`.
void broadcast_scale(const float* src, const Shape& kept, float* dst, const Shape& full, float scale);

}  // namespace chorus::backend::cpu
