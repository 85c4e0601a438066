// jit::Function: a tensor function compiled per input signature (tf.function with
// jit_compile=True). The first call with new argument shapes and dtypes runs the function
// eagerly while tracing it; the traced graph, rewritten by the passes and memory-planned,
// then runs every later call with that signature. A call that cannot be one static graph
// (an op with no compiled form, control flow on tensor values) keeps running eagerly for
// that signature, with a warning once naming why. Not thread-safe: one call at a time.
//
//   jit::Function gelu_bias("gelu_bias", [&](std::span<const Tensor> x) {
//     return std::vector<Tensor>{ops::gelu(ops::add(x[0], bias))};
//   });
//   Tensor y = gelu_bias({x})[0];
//
// Host values the function reads when traced (a Python float, a shape) are constants of
// the graph, as tf.function's; tensors it reads and does not make (a variable) are read
// live at every call. It records nothing on a GradientTape around the call: compute
// gradients inside the function.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chorus/jit/executable.h"

namespace chorus::jit {

struct FunctionOptions {
  // Signatures kept compiled; the least recently used goes beyond it (tf.function's
  // retracing, bounded).
  int max_traces = 8;
};

class Function {
 public:
  using Fn = std::function<std::vector<Tensor>(std::span<const Tensor> arguments)>;

  Function(std::string name, Fn fn, FunctionOptions options = {});
  ~Function();

  // fn(arguments), compiled. Throws ValueError if an argument is tracked by a tape.
  std::vector<Tensor> operator()(std::span<const Tensor> arguments);
  std::vector<Tensor> operator()(std::initializer_list<Tensor> arguments) {
    return (*this)(std::span<const Tensor>(arguments.begin(), arguments.size()));
  }

  // How many times fn was traced (one per new signature).
  int num_traces() const { return num_traces_; }
  // The compiled form for `arguments`' signature, or nullptr (not traced yet, or eager).
  const Executable* executable_for(std::span<const Tensor> arguments) const;

 private:
  struct Entry;
  Entry* find(std::span<const Tensor> arguments) const;
  Entry& trace(std::span<const Tensor> arguments, std::vector<Tensor>& results);
  void make_room(std::span<const Tensor> arguments);

  std::string name_;
  Fn fn_;
  FunctionOptions options_;
  std::vector<std::unique_ptr<Entry>> entries_;
  uint64_t clock_ = 0;
  int num_traces_ = 0;
  bool warned_retracing_ = false;
};

// The graph pipeline a trace goes through (dead code, then fusion), writing each stage to
// CHORUS_JIT_DUMP (a folder) when set: "<name>.<n>.before.txt", ".after.txt", ".after.dot"
// (Function adds ".threads.txt", Executable::tuning_text, once the nodes' threads are chosen).
std::unique_ptr<Executable> compile(Graph graph, int trace_number);

}  // namespace chorus::jit
