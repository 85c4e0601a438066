#include "chorus/jit/graph.h"

#include <algorithm>
#include <fmt/format.h>

namespace chorus::jit {
namespace {

const char* kind_name(BufferKind kind) {
  switch (kind) {
    case BufferKind::kArgument: return "argument";
    case BufferKind::kExternal: return "external";
    case BufferKind::kConstant: return "constant";
    case BufferKind::kIntermediate: return "intermediate";
  }
  return "?";
}

std::string value_list(std::span<const int> values) {
  std::string out;
  for (int v : values) out += fmt::format("{}%{}", out.empty() ? "" : ", ", v);
  return out;
}

void node_text(const Graph& graph, const Node& node, const std::string& indent, std::string& out) {
  const std::string layer = node.layer.empty() ? "" : "  # " + node.layer;
  if (node.outputs.empty()) {  // a host node with effects only
    out += fmt::format("{}{}({}){}\n", indent, node.op, value_list(node.inputs), layer);
    return;
  }
  const Value& first = graph.values[node.outputs.front()];
  out += fmt::format("{}{} = {}({})  {} {}{}\n", indent, value_list(node.outputs), node.op, value_list(node.inputs),
                     first.shape.to_string(), dtype_name(first.dtype), layer);
  for (const Node& member : node.members) node_text(graph, member, indent + "  | ", out);
}

}  // namespace

std::string Graph::to_text() const {
  std::string out = fmt::format("graph {}: {} nodes, {} values\n", name, nodes.size(), values.size());
  for (size_t a = 0; a < arguments.size(); ++a) {
    const Value& v = values[arguments[a]];
    out += fmt::format("  %{} = argument {}  {} {}\n", arguments[a], a, v.shape.to_string(), dtype_name(v.dtype));
  }
  for (size_t v = 0; v < values.size(); ++v) {
    const Buffer& b = buffers[values[v].buffer];
    if (b.kind == BufferKind::kExternal || b.kind == BufferKind::kConstant) {
      out += fmt::format("  %{} = {}  {} {}\n", v, kind_name(b.kind), values[v].shape.to_string(),
                         dtype_name(values[v].dtype));
    }
  }
  for (const Node& node : nodes) node_text(*this, node, "  ", out);
  out += fmt::format("  return {}\n", value_list(results));
  return out;
}

std::string Graph::to_dot() const {
  std::string out = fmt::format("digraph \"{}\" {{\n  node [shape=box, fontname=monospace];\n", name);
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    std::string label = node.op;
    for (const Node& member : node.members) label += "\\n" + member.op;
    out += fmt::format("  n{} [label=\"{}\"{}];\n", n, label, node.kind == NodeKind::kFused ? ", style=bold" : "");
  }
  std::vector<int> producer(values.size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int v : nodes[n].outputs) producer[v] = static_cast<int>(n);
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int v : nodes[n].inputs) {
      if (producer[v] >= 0) {
        out += fmt::format("  n{} -> n{} [label=\"%{}\"];\n", producer[v], n, v);
      } else {
        out += fmt::format("  v{} [label=\"%{} {}\", shape=ellipse];\n  v{} -> n{};\n", v, v,
                           kind_name(buffers[values[v].buffer].kind), v, n);
      }
    }
  }
  return out + "}\n";
}

std::vector<int> buffers_of(const Graph& graph, std::span<const int> values) {
  std::vector<int> out;
  for (int v : values) out.push_back(graph.values[v].buffer);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace chorus::jit
