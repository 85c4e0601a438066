#include "chorus/jit/executable.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "chorus/backend/cpu/elementwise_kernels.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/jit/passes.h"
#include "chorus/profiler/profiler.h"

namespace chorus::jit {
namespace {

// Elements per thread below which a fused pass stays on one thread (as the eager
// elementwise drivers' cheap grain).
constexpr int64_t kFusedGrain = 16384;
constexpr size_t kMaxElementBytes = 8;
constexpr double kNoTime = std::numeric_limits<double>::infinity();

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Executable::Executable(Graph graph) : graph_(std::move(graph)), plan_(plan_memory(graph_)) {
  if (plan_.arena_bytes > 0) arena_ = Storage::allocate(plan_.arena_bytes, Device::cpu());
  per_call_.assign(graph_.buffers.size(), false);
  for (int v : graph_.arguments) per_call_[graph_.values[v].buffer] = true;
  for (int v : graph_.results) {
    if (graph_.buffers[graph_.values[v].buffer].kind == BufferKind::kIntermediate) {
      per_call_[graph_.values[v].buffer] = true;
    }
  }
  call_storage_.resize(graph_.buffers.size());
  call_base_.assign(graph_.buffers.size(), 0);
  node_threads_.assign(graph_.nodes.size(), 0);
  node_seconds_.assign(graph_.nodes.size(), {kNoTime, kNoTime});
  run_seconds_.fill(kNoTime);
  bind();
}

Tensor Executable::bind_value(int value) {
  const Value& v = graph_.values[value];
  const Buffer& b = graph_.buffers[v.buffer];
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = v.shape;
  impl->dtype = v.dtype;
  if (per_call_[v.buffer]) {
    followers_.push_back(Follower{.buffer = v.buffer, .offset = v.offset, .impl = impl.get()});
  } else if (b.held != nullptr) {
    impl->storage = b.held;
    impl->offset = v.offset;
  } else {
    impl->storage = arena_;
    impl->offset = plan_.offsets[v.buffer] + v.offset;
  }
  return Tensor(std::move(impl));
}

// `follow` collects (member index * 3 + operand index, value) for operands on per-call
// buffers: their addresses are only known once the members vector is complete.
Executable::Operand Executable::bind_operand(int value, const Node& fused, int64_t numel,
                                             std::vector<std::pair<int, int>>& follow) {
  Operand o;
  o.element = dtype_size(graph_.values[value].dtype);
  const auto internal = std::find(fused.internal.begin(), fused.internal.end(), value);
  if (internal != fused.internal.end()) {
    o.slot = static_cast<int>(internal - fused.internal.begin());
    return o;
  }
  o.scalar = graph_.values[value].shape.numel() == 1 && numel > 1;
  if (per_call_[graph_.values[value].buffer]) {
    follow.emplace_back(-1, value);  // the caller fills the position
  } else {
    o.base = static_cast<char*>(bind_value(value).raw_data());
  }
  return o;
}

void Executable::bind() {
  bound_.resize(graph_.nodes.size());
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    const Node& node = graph_.nodes[n];
    Bound& bound = bound_[n];
    if (node.kind != NodeKind::kFused) {
      for (int v : node.inputs) bound.inputs.push_back(bind_value(v));
      for (int v : node.outputs) bound.outputs.push_back(bind_value(v));
      continue;
    }
    Fused& fused = bound.fused;
    fused.numel = graph_.values[node.members[0].outputs[0]].shape.numel();
    std::vector<std::pair<int, int>> follow;  // (member * 3 + operand, value)
    for (const Node& m : node.members) {
      const int index = static_cast<int>(fused.members.size());
      Member member{.node = &m, .dtype = graph_.values[m.inputs[0]].dtype};
      for (size_t i = 0; i <= m.inputs.size(); ++i) {
        const int value = i < m.inputs.size() ? m.inputs[i] : m.outputs[0];
        const size_t before = follow.size();
        (i < m.inputs.size() ? member.in[i] : member.out) = bind_operand(value, node, fused.numel, follow);
        if (follow.size() > before) follow.back().first = index * 3 + static_cast<int>(i < m.inputs.size() ? i : 2);
      }
      fused.members.push_back(member);
    }
    for (const auto& [position, value] : follow) {
      Member& member = fused.members[position / 3];
      Operand* operand = position % 3 == 2 ? &member.out : &member.in[position % 3];
      followers_.push_back(Follower{.buffer = graph_.values[value].buffer, .offset = graph_.values[value].offset,
                                    .operand = operand});
    }
  }
}

void Executable::run_fused(const Fused& fused) const {
  backend::cpu::parallel_for(fused.numel, kFusedGrain, [&](int64_t begin, int64_t end) {
    alignas(64) std::byte scratch[kMaxInternalValues][kFusedBlock * kMaxElementBytes];
    for (int64_t block = begin; block < end; block += kFusedBlock) {
      const int64_t n = std::min(kFusedBlock, end - block);
      auto at = [&](const Operand& o) -> char* {
        if (o.slot >= 0) return reinterpret_cast<char*>(scratch[o.slot]);
        return o.scalar ? o.base : o.base + static_cast<size_t>(block) * o.element;
      };
      for (const Member& m : fused.members) {
        if (m.node->kind == NodeKind::kUnary) {
          backend::cpu::unary_loop(m.node->unary, m.dtype, at(m.in[0]), at(m.out), n, m.node->params);
        } else {
          backend::cpu::binary_loop(m.node->binary, m.dtype, at(m.in[0]), m.in[0].scalar, at(m.in[1]), m.in[1].scalar,
                                    at(m.out), n, m.node->params);
        }
      }
    }
  });
}

// Gives this call's memory to the per-call buffers: the caller's argument tensors, and
// fresh storage for the results; then points every binding on them at it.
void Executable::point_followers(std::span<const Tensor> arguments) {
  for (size_t a = 0; a < arguments.size(); ++a) {
    const int b = graph_.values[graph_.arguments[a]].buffer;
    call_storage_[b] = arguments[a].impl()->storage;
    call_base_[b] = arguments[a].impl()->offset;
  }
  for (int v : graph_.results) {
    const int b = graph_.values[v].buffer;
    if (per_call_[b] && graph_.buffers[b].kind == BufferKind::kIntermediate && call_storage_[b] == nullptr) {
      call_storage_[b] = Storage::allocate(graph_.buffers[b].nbytes, Device::cpu());
      call_base_[b] = 0;
    }
  }
  for (const Follower& f : followers_) {
    const std::shared_ptr<Storage>& storage = call_storage_[f.buffer];
    if (f.impl != nullptr) {
      f.impl->storage = storage;
      f.impl->offset = call_base_[f.buffer] + f.offset;
    } else {
      f.operand->base = static_cast<char*>(storage->data()) + call_base_[f.buffer] + f.offset;
    }
  }
}

void Executable::run_node(size_t n) {
  const Node& node = graph_.nodes[n];
  const Bound& b = bound_[n];
  profiler::Scope event("op", std::string_view(node.op));
  switch (node.kind) {
    case NodeKind::kUnary: backend::cpu::unary(node.unary, b.inputs[0], b.outputs[0], node.params); break;
    case NodeKind::kBinary: backend::cpu::binary(node.binary, b.inputs[0], b.inputs[1], b.outputs[0], node.params); break;
    case NodeKind::kKernel: node.kernel(b.inputs, b.outputs); break;
    case NodeKind::kFused: run_fused(b.fused); break;
  }
}

void Executable::run_nodes() {
  just_tuned_ = false;
  const bool tuning = backend::cpu::intra_op_threads() > 1 && runs_ >= 1 && runs_ <= kTuningRuns;
  Threads way = threads_;
  if (tuning) way = runs_ > kTuningRuns - 2 ? Threads::kPerNode : runs_ % 2 == 1 ? Threads::kBudget : Threads::kOne;
  if (tuning && runs_ == kTuningRuns - 1) {
    for (size_t n = 0; n < graph_.nodes.size(); ++n) node_threads_[n] = node_seconds_[n][1] < node_seconds_[n][0];
  }
  std::optional<backend::cpu::IntraOpThreadsScope> one_thread;
  if (way == Threads::kOne) one_thread.emplace(1);
  const auto run_start = std::chrono::steady_clock::now();
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    if (way == Threads::kPerNode) {
      std::optional<backend::cpu::IntraOpThreadsScope> node_one_thread;
      if (node_threads_[n] == 1) node_one_thread.emplace(1);
      run_node(n);
    } else if (tuning) {
      const auto start = std::chrono::steady_clock::now();
      run_node(n);
      double& best = node_seconds_[n][way == Threads::kOne];
      best = std::min(best, seconds_since(start));
    } else {
      run_node(n);
    }
  }
  if (!tuning) {
    runs_ = std::max(runs_, 1);  // the first run warms up
    return;
  }
  double& best = run_seconds_[static_cast<int>(way)];
  best = std::min(best, seconds_since(run_start));
  ++runs_;
  // A first one-thread run this much slower than the budget's (a step of big matmuls)
  // ends the tuning on the budget: the slow runs left would cost more than any choice
  // among close ones could win, and each new signature pays them again.
  const bool one_lost = runs_ == 3 && run_seconds_[1] > kOneThreadLoses * run_seconds_[0];
  if (runs_ == kTuningRuns + 1 || one_lost) {
    runs_ = kTuningRuns + 1;
    threads_ = static_cast<Threads>(std::min_element(run_seconds_.begin(), run_seconds_.end()) - run_seconds_.begin());
    just_tuned_ = true;
  }
}

std::string Executable::tuning_text() const {
  static constexpr const char* kWays[] = {"the caller's budget", "one thread", "each node as it ran faster"};
  std::string out = fmt::format("{}: runs on {}; fastest whole run (us): budget {:.1f}, one {:.1f}, per node {:.1f}\n",
                                graph_.name, kWays[static_cast<int>(threads_)], run_seconds_[0] * 1e6,
                                run_seconds_[1] * 1e6, run_seconds_[2] * 1e6);
  out += "  node op                                   per-node choice  budget (us)  one (us)\n";
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    const auto& [budget, one] = node_seconds_[n];
    out += fmt::format("  {:4} {:<36} {:>15} {:12.2f} {:9.2f}\n", n, graph_.nodes[n].op,
                       node_threads_[n] == 1 ? "one" : "budget", budget * 1e6, one * 1e6);
  }
  return out;
}

std::vector<Tensor> Executable::run(std::span<const Tensor> arguments) {
  if (arguments.size() != graph_.arguments.size()) {
    throw_error<ValueError>("jit: '{}' was traced for {} arguments, got {}", graph_.name, graph_.arguments.size(),
                            arguments.size());
  }
  for (size_t a = 0; a < arguments.size(); ++a) {
    const Value& v = graph_.values[graph_.arguments[a]];
    const Tensor& t = arguments[a];
    if (!t.defined() || t.impl()->sharding != nullptr || t.shape() != v.shape || t.dtype() != v.dtype) {
      throw_error<ValueError>("jit: '{}' was traced for argument {} of shape {} and dtype {}; got {}", graph_.name, a,
                              v.shape.to_string(), dtype_name(v.dtype),
                              !t.defined() ? "an undefined tensor" : t.shape().to_string() + " " + std::string(dtype_name(t.dtype())));
    }
  }
  point_followers(arguments);
  // Afterwards (even when a kernel throws) keep neither the caller's arguments nor the
  // results alive past the call.
  struct Release {
    Executable& e;
    ~Release() {
      for (std::shared_ptr<Storage>& storage : e.call_storage_) storage.reset();
      for (const Follower& f : e.followers_) {
        if (f.impl != nullptr) f.impl->storage.reset();
      }
    }
  } release{*this};
  run_nodes();
  std::vector<Tensor> results;
  for (int r : graph_.results) {
    const Value& v = graph_.values[r];
    const Buffer& buffer = graph_.buffers[v.buffer];
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = per_call_[v.buffer] ? call_storage_[v.buffer] : buffer.held;
    impl->offset = (per_call_[v.buffer] ? call_base_[v.buffer] : 0) + v.offset;
    impl->shape = v.shape;
    impl->dtype = v.dtype;
    results.emplace_back(std::move(impl));
  }
  return results;
}

}  // namespace chorus::jit
