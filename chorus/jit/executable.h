// A traced Graph made ready to run: the memory plan's arena allocated once and a tensor
// bound to every value a node reads or writes. A run points the argument values at the
// caller's tensors (no copy), gives each result buffer fresh memory the caller keeps, runs
// the nodes in order, and allocates nothing else (kernels that keep scratch of their own
// aside). Not thread-safe: runs share the arena and the bindings, so one runs at a time.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "chorus/jit/graph.h"
#include "chorus/jit/memory_plan.h"

namespace chorus::jit {

class Executable {
 public:
  explicit Executable(Graph graph);
  Executable(const Executable&) = delete;  // bindings point into graph_ and the arena
  Executable& operator=(const Executable&) = delete;

  // The results of the traced function for `arguments`, which must have the traced
  // arguments' shapes and dtypes (ValueError naming the first that differs).
  std::vector<Tensor> run(std::span<const Tensor> arguments);

  const Graph& graph() const { return graph_; }
  const MemoryPlan& plan() const { return plan_; }

 private:
  // Where one operand of a fused member is, for a block starting at element `begin`.
  struct Operand {
    char* base = nullptr;  // its first element (set per call where its buffer is per call)
    int slot = -1;         // >= 0: in the block's scratch slot instead
    bool scalar = false;   // stays on its first element
    size_t element = 0;    // bytes per element
  };
  struct Member {
    const Node* node;
    Operand in[2];
    Operand out;
    DType dtype;  // the inputs'
  };
  struct Fused {
    int64_t numel = 0;
    std::vector<Member> members;
  };
  struct Bound {
    std::vector<Tensor> inputs, outputs;
    Fused fused;
  };
  // A binding whose buffer's memory changes with each call (an argument's, a result's).
  struct Follower {
    int buffer;
    size_t offset;  // the value's bytes into the buffer
    TensorImpl* impl = nullptr;
    Operand* operand = nullptr;
  };

  Tensor bind_value(int value);
  Operand bind_operand(int value, const Node& fused, int64_t numel, std::vector<std::pair<int, int>>& follow);
  void bind();
  void point_followers(std::span<const Tensor> arguments);
  void run_fused(const Fused& fused) const;

  Graph graph_;
  MemoryPlan plan_;
  std::shared_ptr<Storage> arena_;
  std::vector<Bound> bound_;  // per node
  std::vector<bool> per_call_;  // per buffer: its memory is the call's (argument, result)
  std::vector<Follower> followers_;
  std::vector<std::shared_ptr<Storage>> call_storage_;  // per buffer, during a call
  std::vector<size_t> call_base_;
};

}  // namespace chorus::jit
