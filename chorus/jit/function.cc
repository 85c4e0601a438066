#include "chorus/jit/function.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "chorus/jit/passes.h"
#include "chorus/jit/tracer.h"

namespace chorus::jit {

// The shapes and dtypes a call's arguments have (tf.function's input signature).
struct FunctionSignature {
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
};

namespace {
using Signature = FunctionSignature;

Signature signature_of(std::span<const Tensor> arguments) {
  Signature s;
  for (const Tensor& t : arguments) {
    s.shapes.push_back(t.defined() ? t.shape() : Shape{});
    s.dtypes.push_back(t.defined() ? t.dtype() : kFloat32);
  }
  return s;
}

bool matches(const Signature& s, std::span<const Tensor> arguments) {
  if (s.shapes.size() != arguments.size()) return false;
  for (size_t a = 0; a < arguments.size(); ++a) {
    if (!arguments[a].defined() || arguments[a].shape() != s.shapes[a] || arguments[a].dtype() != s.dtypes[a]) {
      return false;
    }
  }
  return true;
}

// CHORUS_JIT_DUMP's folder, or nullptr.
const char* dump_dir() {
  const char* dir = std::getenv("CHORUS_JIT_DUMP");
  return dir == nullptr || *dir == '\0' ? nullptr : dir;
}

void write_dump(const std::string& graph_name, int trace_number, const std::string& stage, const std::string& text) {
  const char* dir = dump_dir();
  if (dir == nullptr) return;
  std::filesystem::create_directories(dir);
  std::ofstream(fmt::format("{}/{}.{}.{}", dir, graph_name, trace_number, stage)) << text;
}

}  // namespace

struct Function::Entry {
  Signature signature;
  std::unique_ptr<Executable> executable;  // nullptr: this signature runs eagerly
  uint64_t last_used = 0;
  int trace_number = 0;
};

Function::Function(std::string name, Fn fn, FunctionOptions options)
    : name_(std::move(name)), fn_(std::move(fn)), options_(options) {
  if (options_.max_traces < 1) {
    throw_error<ValueError>("jit: max_traces must be at least 1. Received: max_traces={}", options_.max_traces);
  }
}

Function::~Function() = default;

std::unique_ptr<Executable> compile(Graph graph, int trace_number) {
  if (dump_dir() != nullptr) write_dump(graph.name, trace_number, "before.txt", graph.to_text());
  eliminate_dead_code(graph);
  fuse_elementwise(graph);
  if (dump_dir() != nullptr) {
    write_dump(graph.name, trace_number, "after.txt", graph.to_text());
    write_dump(graph.name, trace_number, "after.dot", graph.to_dot());
  }
  return std::make_unique<Executable>(std::move(graph));
}

Function::Entry* Function::find(std::span<const Tensor> arguments) const {
  for (const auto& e : entries_) {
    if (matches(e->signature, arguments)) return e.get();
  }
  return nullptr;
}

const Executable* Function::executable_for(std::span<const Tensor> arguments) const {
  const Entry* e = find(arguments);
  return e == nullptr ? nullptr : e->executable.get();
}

void Function::make_room(std::span<const Tensor> arguments) {
  if (static_cast<int>(entries_.size()) < options_.max_traces) return;
  auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                 [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
  auto newest = std::max_element(entries_.begin(), entries_.end(),
                                 [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
  if (!warned_retracing_) {
    warned_retracing_ = true;
    size_t changing = 0;
    while (changing < arguments.size() && changing < (*newest)->signature.shapes.size() &&
           arguments[changing].shape() == (*newest)->signature.shapes[changing]) {
      ++changing;
    }
    std::cerr << fmt::format(
        "chorus: warning: jit function '{}' was traced {} times; argument {}'s shape keeps changing (now {}). "
        "Each new shape traces again: pad it to a few fixed shapes\n",
        name_, num_traces_ + 1, changing, changing < arguments.size() ? arguments[changing].shape().to_string() : "");
  }
  entries_.erase(oldest);
}

Function::Entry& Function::trace(std::span<const Tensor> arguments, std::vector<Tensor>& results) {
  make_room(arguments);
  auto entry = std::make_unique<Entry>();
  entry->signature = signature_of(arguments);
  entry->trace_number = ++num_traces_;
  std::string failure;
  {
    Tracer tracer(name_, arguments);
    results = fn_(arguments);
    try {
      entry->executable = compile(tracer.finish(results), num_traces_);
    } catch (const ValueError&) {
      if (tracer.failure().empty()) throw;  // not the trace's failure
      failure = tracer.failure();  // in the ops, or a result no kernel wrote
    }
  }
  if (!failure.empty()) {
    std::cerr << fmt::format("chorus: warning: jit function '{}' runs eagerly for these argument shapes: {}\n", name_,
                             failure);
  }
  entries_.push_back(std::move(entry));
  return *entries_.back();
}

std::vector<Tensor> Function::operator()(std::span<const Tensor> arguments) {
  for (size_t a = 0; a < arguments.size(); ++a) {
    if (arguments[a].defined() && arguments[a].impl()->autograd.tape_id != 0) {
      throw_error<ValueError>(
          "jit function '{}': argument {} is tracked by a GradientTape, and a compiled call records nothing on it. "
          "Compute the gradients inside the function",
          name_, a);
    }
  }
  if (Tracer::current() != nullptr) return fn_(arguments);  // inside another trace: its ops join that graph
  Entry* entry = find(arguments);
  std::vector<Tensor> results;
  if (entry == nullptr) {
    trace(arguments, results).last_used = ++clock_;
    return results;
  }
  entry->last_used = ++clock_;
  if (entry->executable == nullptr) return fn_(arguments);
  results = entry->executable->run(arguments);
  if (entry->executable->just_tuned() && dump_dir() != nullptr) {
    write_dump(name_, entry->trace_number, "threads.txt", entry->executable->tuning_text());
  }
  return results;
}

}  // namespace chorus::jit
