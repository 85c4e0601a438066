// GradientReducer: the data-parallel gradient reduction of one model. The trainable
// variables are packed, in reverse order (the order backward produces their gradients),
// into buckets of about 1 MiB; a variable larger than half a bucket is cut into row
// blocks, each a bucket of its own, which the tape streams as the kernel's matmul
// backward writes them (autograd::GradientStreaming). Each replica scales its gradients by
// its share of the global batch while packing, and a bucket's all-reduce starts as soon as
// it is complete, overlapping the rest of the backward pass. Across workers the reduction
// is hierarchical: the local replicas reduce a bucket in-process, then replica 0
// all-reduces it with the other workers (one Gloo all-reduce per bucket, on the
// communicator's background thread, still overlapping backward; the last bucket, ready
// only when backward ends, is all-reduced by finish() on the calling thread). Only
// replica 0 needs the global sum: it runs the update of the variables that all local
// mirrors share. Each replica thread touches only its own buffers; the plan is made once,
// by whichever replica comes first. Variables with sparse_gradients() (embedding tables)
// of at least kRowExchangeMinRows rows are left out: the replica context exchanges the
// rows their gradients name instead. A smaller table costs less to all-reduce whole than
// its rows do to gather, group and update on one replica.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "chorus/autograd/tape.h"
#include "chorus/autograd/variable.h"
#include "chorus/comm/communicator.h"

namespace chorus::replicas {

// The gradient bucket size: $CHORUS_GRADIENT_BUCKET_BYTES (>= 4) or 1 MiB. Throws
// ValueError for a malformed value.
int64_t gradient_bucket_bytes_from_env();

class GradientReducer {
 public:
  static constexpr int64_t kDefaultBucketBytes = int64_t{1} << 20;
  // The smallest embedding table whose gradient travels as rows (see above): where
  // exchanging rows overtook all-reducing two tables whole on 2 devices at batch 1000
  // (`embedding_bench --devices 2`). A fixed number: every worker must make the same
  // plan, whatever its batches.
  static constexpr int64_t kRowExchangeMinRows = 2048;

  explicit GradientReducer(int max_replicas, int64_t bucket_bytes = kDefaultBucketBytes);

  // The bucket sizes, in floats, in launch order, that `variables` would be packed into.
  static std::vector<int64_t> plan_buckets(std::span<const autograd::Variable> variables,
                                           int64_t bucket_bytes = kDefaultBucketBytes);

  // Starts a step on `replica`: checks `variables` against the plan (making it on the
  // first call), clears the replica's per-step state. `scale` multiplies every gradient.
  // `local` connects the replicas of this process; `workers` (nullptr for one worker)
  // connects the workers and is used by replica 0 only. Throws ValueError if the
  // variables differ from those of earlier steps.
  void begin(int replica, std::span<const autograd::Variable> variables, float scale, comm::Communicator* local,
             comm::Communicator* workers);
  // The tape's hooks for begin()'s variables (GradientStreaming).
  autograd::GradientStreaming streaming(int replica);
  // Packs the final gradient of variables[index]; launches every bucket that is complete
  // and whose predecessors have launched (buckets start in the same order on every replica).
  void ready(int replica, size_t index, const Tensor& gradient);
  // Packs the blocks of variables[index] within rows [0, end) of `gradient`, which will be
  // its final gradient, and launches what is complete.
  void rows_ready(int replica, size_t index, const Tensor& gradient, int64_t end);
  // Where variables[index]'s row blocks end (empty before the plan is made).
  std::span<const int64_t> row_ends(size_t index) const { return slots_[index].row_ends; }
  // Whether variables[index] is left out of the buckets (a large embedding table).
  bool sparse(size_t index) const { return slots_[index].pieces == 0; }
  // Packs the gradients not yet packed (those passed to apply_gradients without
  // streaming), launches the remaining buckets, waits for all and returns the reduced
  // gradients: views into the replica's buckets, undefined where the local one was.
  std::vector<Tensor> finish(int replica, std::span<const Tensor> grads, std::span<const autograd::Variable> variables);

  size_t num_buckets() const { return buckets_.size(); }

 private:
  // A variable: its blocks are pieces_[first_piece, first_piece + pieces).
  struct Slot {
    const TensorImpl* variable;
    int64_t numel;
    size_t first_piece, pieces;
    std::vector<int64_t> row_ends;  // per piece: the leading-axis row it ends at
  };
  // A block of leading-axis rows of one variable, packed at `offset` in its bucket.
  struct Piece {
    int64_t begin, end;  // in the variable, in floats
    size_t bucket;
    int64_t offset;  // in the replica's storage, in floats
  };
  struct Bucket {
    int64_t start = 0;  // in the replica's storage, in floats
    int64_t numel = 0;
    size_t pieces = 0;
  };
  // One replica's buffers and the state of its current step.
  struct Replica {
    Tensor storage;                       // every bucket, back to back, so a split variable's are contiguous
    std::vector<Tensor> buffers;          // per bucket: a slice of storage
    std::vector<size_t> packed_in;        // pieces packed per bucket
    std::vector<bool> packed;              // per piece
    // Per slot: the memory of the gradient packed (nullptr: undefined or none yet). Its
    // address, not its tensor: a compiled step hands each node its own tensor of a value.
    std::vector<const void*> source;
    std::vector<std::unique_ptr<comm::Work>> work;        // per bucket: the local reduction
    std::vector<std::unique_ptr<comm::Work>> cross_work;  // per bucket: the reduction across workers
    size_t launched = 0;
    float scale = 1;
    comm::Communicator* local = nullptr;
    comm::Communicator* workers = nullptr;  // set on every replica of a multi-worker job
  };

  void make_plan(std::span<const autograd::Variable> variables);
  // Packs the first `count` pieces of variables[index] from `gradient` (zeros if
  // undefined): those not packed yet, or all of them when `repack`.
  void pack(Replica& r, size_t index, const Tensor& gradient, size_t count, bool repack = false);
  // `finishing`: called from finish(), which waits for every bucket at once.
  void launch_ready(Replica& r, bool finishing);

  int64_t bucket_floats_;
  std::mutex plan_mutex_;
  bool planned_ = false;
  std::vector<Slot> slots_;  // per variable, in the variables' order
  std::vector<Piece> pieces_;
  std::vector<Bucket> buckets_;
  std::vector<Replica> replicas_;
};

}  // namespace chorus::replicas
