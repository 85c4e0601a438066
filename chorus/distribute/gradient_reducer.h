// GradientReducer: the data-parallel gradient reduction of one model. The trainable
// variables are packed, in reverse order (the order backward produces their gradients),
// into buckets of about 1 MiB; each replica scales its gradients by its share of the
// global batch while packing, and a bucket's all-reduce starts as soon as its last
// gradient is final, overlapping the rest of the backward pass. Across workers the
// reduction is hierarchical: the local replicas reduce a bucket in-process, then replica 0
// all-reduces it with the other workers (one Gloo all-reduce per bucket, on the
// communicator's background thread, still overlapping backward; the last bucket, ready
// only when backward ends, is all-reduced by finish() on the calling thread). Only replica 0 needs the
// global sum: it runs the update of the variables that all local mirrors share. Each
// replica thread touches only its own buffers; the plan is made once, by whichever
// replica comes first.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "chorus/autograd/variable.h"
#include "chorus/distribute/communicator.h"

namespace chorus::distribute {

class GradientReducer {
 public:
  explicit GradientReducer(int max_replicas, int64_t bucket_bytes = int64_t{1} << 20);

  // Starts a step on `replica`: checks `variables` against the plan (making it on the
  // first call), clears the replica's per-step state. `scale` multiplies every gradient.
  // `local` connects the replicas of this process; `workers` (nullptr for one worker)
  // connects the workers and is used by replica 0 only. Throws ValueError if the
  // variables differ from those of earlier steps.
  void begin(int replica, std::span<const autograd::Variable> variables, float scale, Communicator* local,
             Communicator* workers);
  // Packs the final gradient of variables[index]; launches every bucket that is complete
  // and whose predecessors have launched (buckets start in the same order on every replica).
  void ready(int replica, size_t index, const Tensor& gradient);
  // Packs the gradients not yet packed (those passed to apply_gradients without
  // streaming), launches the remaining buckets, waits for all and returns the reduced
  // gradients: views into the replica's buckets, undefined where the local one was.
  std::vector<Tensor> finish(int replica, std::span<const Tensor> grads, std::span<const autograd::Variable> variables);

  size_t num_buckets() const { return buckets_.size(); }

 private:
  struct Slot {
    const TensorImpl* variable;
    int64_t numel;
    size_t bucket;
    int64_t offset;  // in the bucket, in floats
  };
  struct Bucket {
    int64_t numel = 0;
    size_t slots = 0;
  };
  // One replica's buffers and the state of its current step.
  struct Replica {
    std::vector<Tensor> buffers;          // one float32 tensor per bucket
    std::vector<size_t> packed_in;        // gradients packed per bucket
    std::vector<bool> packed;              // per slot
    std::vector<const TensorImpl*> source;  // the gradient packed per slot (nullptr: undefined)
    std::vector<std::unique_ptr<Work>> work;        // per bucket: the local reduction
    std::vector<std::unique_ptr<Work>> cross_work;  // per bucket: the reduction across workers
    size_t launched = 0;
    float scale = 1;
    Communicator* local = nullptr;
    Communicator* workers = nullptr;  // set on every replica of a multi-worker job
  };

  void make_plan(std::span<const autograd::Variable> variables);
  void pack(Replica& r, size_t index, const Tensor& gradient);
  // `finishing`: called from finish(), which waits for every bucket at once.
  void launch_ready(Replica& r, bool finishing);

  int64_t bucket_floats_;
  std::mutex plan_mutex_;
  bool planned_ = false;
  std::vector<Slot> slots_;  // per variable, in the variables' order
  std::vector<Bucket> buckets_;
  std::vector<Replica> replicas_;
};

}  // namespace chorus::distribute
