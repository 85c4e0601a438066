#include "chorus/jit/passes.h"

#include <algorithm>
#include <map>
#include <set>

namespace chorus::jit {
namespace {

bool writes_external(const Graph& graph, const Node& node) {
  for (int v : node.outputs) {
    if (graph.buffers[graph.values[v].buffer].kind == BufferKind::kExternal) return true;
  }
  return false;
}

// Whether `node` may join a fused pass over `numel` elements.
bool fusable(const Graph& graph, const Node& node, int64_t numel) {
  if (node.kind != NodeKind::kUnary && node.kind != NodeKind::kBinary) return false;
  if (graph.values[node.outputs[0]].shape.numel() != numel || numel == 0) return false;
  for (int v : node.inputs) {
    const int64_t n = graph.values[v].shape.numel();
    if (n != numel && n != 1) return false;
  }
  return !writes_external(graph, node);
}

// How many nodes read each buffer, outside [begin, end) and in it, and which buffers hold
// results: what decides whether a member's output must be written out.
struct Readers {
  std::vector<int> outside;
  std::set<int> results;
};

Readers readers_outside(const Graph& graph, size_t begin, size_t end) {
  Readers r{std::vector<int>(graph.buffers.size(), 0), {}};
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (n >= begin && n < end) continue;
    for (int b : buffers_of(graph, graph.nodes[n].inputs)) ++r.outside[b];
  }
  for (int v : graph.results) r.results.insert(graph.values[v].buffer);
  return r;
}

// Whether `node` reads the run's values only whole: an input on a buffer the run writes
// must be the value the run made there, or a view of all of it (a reshape), so that block
// i of the input is block i of the made value.
bool reads_whole_values(const Graph& graph, const Node& node, const std::map<int, int>& made_on) {
  for (int v : node.inputs) {
    auto it = made_on.find(graph.values[v].buffer);
    if (it == made_on.end()) continue;
    const Value &in = graph.values[v], &made = graph.values[it->second];
    if (in.offset != made.offset || in.nbytes() != made.nbytes() || in.dtype != made.dtype) return false;
  }
  return true;
}

Node fuse_run(const Graph& graph, size_t begin, size_t end) {
  Node fused{.op = "fused", .kind = NodeKind::kFused};
  const Readers readers = readers_outside(graph, begin, end);
  std::map<int, int> made_on;  // buffer: the value the run made on it
  for (size_t n = begin; n < end; ++n) {
    Node member = graph.nodes[n];
    for (int& v : member.inputs) {
      if (auto it = made_on.find(graph.values[v].buffer); it != made_on.end()) {
        v = it->second;  // a view of a made value reads the made value's block
      } else if (std::find(fused.inputs.begin(), fused.inputs.end(), v) == fused.inputs.end()) {
        fused.inputs.push_back(v);
      }
    }
    const int out = member.outputs[0];
    const int buffer = graph.values[out].buffer;
    made_on[buffer] = out;
    const bool kept_in_block = readers.outside[buffer] == 0 && !readers.results.contains(buffer) &&
                               graph.values[out].nbytes() == graph.buffers[buffer].nbytes &&
                               static_cast<int>(fused.internal.size()) < kMaxInternalValues;
    (kept_in_block ? fused.internal : fused.outputs).push_back(out);
    fused.members.push_back(std::move(member));
  }
  if (fused.outputs.empty()) {  // nothing reads the run's values: DCE would drop it; keep the last
    fused.outputs.push_back(fused.internal.back());
    fused.internal.pop_back();
  }
  return fused;
}

}  // namespace

int eliminate_dead_code(Graph& graph) {
  std::vector<bool> needed(graph.buffers.size(), false);
  for (int v : graph.results) needed[graph.values[v].buffer] = true;
  std::vector<bool> keep(graph.nodes.size(), false);
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const Node& node = graph.nodes[i];
    bool used = node.effects || writes_external(graph, node);
    for (int b : buffers_of(graph, node.outputs)) used = used || needed[b];
    if (!used) continue;
    keep[i] = true;
    for (int b : buffers_of(graph, node.inputs)) needed[b] = true;
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (keep[i]) kept.push_back(std::move(graph.nodes[i]));
  }
  const int dropped = static_cast<int>(graph.nodes.size() - kept.size());
  graph.nodes = std::move(kept);
  return dropped;
}

int fuse_elementwise(Graph& graph) {
  std::vector<Node> out;
  int replaced = 0;
  size_t n = 0;
  while (n < graph.nodes.size()) {
    const Node& first = graph.nodes[n];
    const int64_t numel = first.outputs.empty() ? 0 : graph.values[first.outputs[0]].shape.numel();
    std::map<int, int> made_on;
    size_t end = n;
    while (end < graph.nodes.size() && fusable(graph, graph.nodes[end], numel) &&
           reads_whole_values(graph, graph.nodes[end], made_on)) {
      made_on[graph.values[graph.nodes[end].outputs[0]].buffer] = graph.nodes[end].outputs[0];
      ++end;
    }
    if (end - n >= 2) {
      out.push_back(fuse_run(graph, n, end));
      replaced += static_cast<int>(end - n);
      n = end;
    } else {
      out.push_back(graph.nodes[n++]);
    }
  }
  graph.nodes = std::move(out);
  return replaced;
}

}  // namespace chorus::jit
