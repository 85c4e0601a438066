// A traced Graph made ready to run: the memory plan's arena allocated once and a tensor
// bound to every value a node reads or writes. A run points the argument values at the
// caller's tensors (no copy), gives each result buffer fresh memory the caller keeps, runs
// the nodes in order, and allocates nothing else (kernels that keep scratch of their own
// aside). Warm-up runs time three ways to run the nodes — all on the caller's intra-op
// threads (as eager), all on one, each on whichever ran it faster — and the fastest whole
// run is kept: small steps lose more to waking a team, and to its spinning, than they gain
// (issue 38: MNIST at batch 64 ran slower on 2 threads than on 1). The choice changes no
// bit: every kernel gives the same results for any thread count (tests check it for
// matmul, the one that could split differently). Not thread-safe: runs share the arena and
// the bindings, so one runs at a time.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
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

  // How the nodes run: on the caller's budget, on one thread, or each as it ran faster.
  enum class Threads : uint8_t { kBudget, kOne, kPerNode };
  // Whether the last run chose threads() (once, after kTuningRuns timed runs).
  bool just_tuned() const { return just_tuned_; }
  // The choice, each way's fastest run, and one line per node with its fastest time on the
  // budget and on one thread.
  std::string tuning_text() const;

  // Runs timed to choose threads(), after the first (page faults, oneDNN's primitives):
  // the budget and one thread alternately, then each node as it ran faster.
  static constexpr int kTuningRuns = 8;
  // ...unless the first run on one thread takes this many times the budget's, which ends
  // the tuning there, on the budget.
  static constexpr double kOneThreadLoses = 1.3;

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
  void run_node(size_t n);
  void run_nodes();

  Graph graph_;
  MemoryPlan plan_;
  std::shared_ptr<Storage> arena_;
  std::vector<Bound> bound_;  // per node
  std::vector<bool> per_call_;  // per buffer: its memory is the call's (argument, result)
  std::vector<Follower> followers_;
  std::vector<std::shared_ptr<Storage>> call_storage_;  // per buffer, during a call
  std::vector<size_t> call_base_;
  std::vector<int> node_threads_;  // per node under kPerNode: 0 (the budget) or 1
  std::vector<std::array<double, 2>> node_seconds_;  // per node: fastest on the budget, on one thread
  std::array<double, 3> run_seconds_;                 // per Threads: the fastest whole run
  Threads threads_ = Threads::kBudget;
  int runs_ = 0;
  bool just_tuned_ = false;
};

}  // namespace chorus::jit
