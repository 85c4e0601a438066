// The static memory plan of a Graph: every intermediate buffer gets an offset in one
// arena, two buffers sharing bytes only when their lives (first write to last read, in
// node order) do not overlap. Made once before the first run, so a run allocates nothing
// but its results. Plain data.
#pragma once

#include <cstddef>
#include <vector>

#include "chorus/jit/graph.h"

namespace chorus::jit {

struct MemoryPlan {
  static constexpr size_t kNotPlaced = static_cast<size_t>(-1);
  std::vector<size_t> offsets;  // per buffer: its byte offset in the arena, or kNotPlaced
  size_t arena_bytes = 0;       // the peak: what the arena holds
  size_t unshared_bytes = 0;    // what the placed buffers would take each on its own
};

// Not placed: buffers that hold a result (each call's results are fresh memory the caller
// keeps), buffers no node writes or reads (the values a fused node keeps in its blocks),
// and the argument, external and constant buffers (the caller's or the traced memory).
MemoryPlan plan_memory(const Graph& graph);

}  // namespace chorus::jit
