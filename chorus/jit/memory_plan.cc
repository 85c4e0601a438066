#include "chorus/jit/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace chorus::jit {
namespace {

constexpr size_t kAlignment = 64;

struct Life {
  int first = 0;  // node index of the first use
  int last = -1;  // node index of the last use
  bool used = false;
};

std::vector<Life> lives_of(const Graph& graph) {
  std::vector<Life> lives(graph.buffers.size());
  const int end = static_cast<int>(graph.nodes.size());
  auto touch = [&](int buffer, int at) {
    Life& life = lives[buffer];
    if (!life.used) life.first = at;
    life.used = true;
    life.last = std::max(life.last, at);
  };
  for (int n = 0; n < end; ++n) {
    for (int b : buffers_of(graph, graph.nodes[n].inputs)) touch(b, n);
    for (int b : buffers_of(graph, graph.nodes[n].outputs)) touch(b, n);
  }
  return lives;
}

bool overlaps(const Life& a, const Life& b) { return a.first <= b.last && b.first <= a.last; }

}  // namespace

MemoryPlan plan_memory(const Graph& graph) {
  MemoryPlan plan;
  plan.offsets.assign(graph.buffers.size(), MemoryPlan::kNotPlaced);
  const std::vector<Life> lives = lives_of(graph);
  std::vector<bool> holds_result(graph.buffers.size(), false);
  for (int v : graph.results) holds_result[graph.values[v].buffer] = true;
  std::vector<int> order;
  for (size_t b = 0; b < graph.buffers.size(); ++b) {
    if (lives[b].used && !holds_result[b] && graph.buffers[b].kind == BufferKind::kIntermediate) {
      order.push_back(static_cast<int>(b));
    }
  }
  // Largest first, each at the lowest offset clear of every placed buffer it coexists with.
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return graph.buffers[a].nbytes > graph.buffers[b].nbytes; });
  std::vector<int> placed;
  for (int b : order) {
    const size_t size = (std::max<size_t>(graph.buffers[b].nbytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    std::vector<std::pair<size_t, size_t>> taken;  // [begin, end) of coexisting buffers
    for (int p : placed) {
      if (overlaps(lives[b], lives[p])) {
        const size_t begin = plan.offsets[p];
        taken.emplace_back(begin, begin + (graph.buffers[p].nbytes + kAlignment - 1) / kAlignment * kAlignment);
      }
    }
    std::sort(taken.begin(), taken.end());
    size_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (offset + size <= begin) break;
      offset = std::max(offset, end);
    }
    plan.offsets[b] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + size);
    plan.unshared_bytes += size;
    placed.push_back(b);
  }
  return plan;
}

}  // namespace chorus::jit
