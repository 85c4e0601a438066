// ReplicaContext: what code running inside one replica of a data-parallel step can ask
// of the distribution (tf.distribute's ReplicaContext). The step runtime (replicas/) makes
// one per replica; it reaches a step as part of its StepContext, and current() is nullptr
// outside a replica step, where every caller behaves as on one device. This header (with
// step_context.h) is all of the distribution that layers and optimizers include.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "chorus/autograd/tape.h"
#include "chorus/autograd/variable.h"

namespace chorus::comm {
class Communicator;
}  // namespace chorus::comm

namespace chorus::step {

class ReplicaContext {
 public:
  virtual ~ReplicaContext() = default;

  // The replica of the step running on the calling thread (StepContext::current()'s), or
  // nullptr outside a replica step: the public accessor, tf.distribute's
  // get_replica_context(), for user-written train_steps and layers.
  static ReplicaContext* current();

  int replica_id() const { return replica_id_; }
  int num_replicas() const { return num_replicas_; }
  // This replica's slice of the global batch: rows [row_offset, row_offset + local_rows)
  // of global_rows.
  int64_t row_offset() const { return row_offset_; }
  int64_t local_rows() const { return local_rows_; }
  int64_t global_rows() const { return global_rows_; }

  // Which call of `owner` (a layer) this is on this replica within this step: 0, 1, ...
  // Every replica makes the same calls, so the numbers agree across replicas. With
  // step() they let Dropout number its calls as one device would (dropout.cc), and
  // draw each mask indexed by global row, so masks do not depend on the replica count.
  virtual uint64_t call_in_step(const void* owner) = 0;
  // Distinct for every step this replica runs (the same on every replica of a step).
  virtual uint64_t step() const = 0;

  // The tape hook for the gradients of `variables` (the model's trainable weights): each
  // gradient is scaled by local_rows / global_rows (the loss is the mean over the global
  // batch) and all-reduced in buckets while the backward pass is still running (a large
  // kernel's in row blocks as its matmul writes them); it lets the variables with
  // sparse_gradients() take IndexedSlices. Pass it to GradientTape::gradient, then give
  // the gradients to Optimizer::apply_gradients.
  virtual autograd::GradientStreaming stream_gradients(std::span<const autograd::Variable> variables) = 0;

  // Optimizer::apply_gradients inside a replica: reduces `grads` across replicas (those
  // that were streamed are ready or in flight), then runs `update` with the reduced
  // gradients on one replica while the others lend it their threads. Returns when the
  // update is done. The gradients of variables with sparse_gradients() are not reduced but
  // gathered: every replica's rows (sparse[i], or all of grads[i] when dense), scaled by its
  // share of the batch, one after another in global replica order.
  using Update = std::function<void(std::span<const Tensor> grads, std::span<const autograd::IndexedSlices> sparse,
                                    std::span<const autograd::Variable> variables)>;
  virtual void apply_gradients(std::span<const Tensor> grads, std::span<const autograd::IndexedSlices> sparse,
                               std::span<const autograd::Variable> variables, const Update& update) = 0;

  // For collectives across workers from inside a step (DistributedEmbedding's lookups):
  // once every replica of this worker running the step has called it (each the same
  // number of times, in the same order), runs `once` on replica 0 while the others wait,
  // and returns on every replica after it has run. A throw from `once` reaches replica
  // 0's caller and fails the others' wait with CollectiveError.
  virtual void run_once(const std::function<void()>& once) = 0;
  // The communicator across the workers of the job, or nullptr in one process.
  virtual comm::Communicator* workers() const = 0;

  // Assigns `value` to a non-trainable variable (BatchNormalization's moving statistics)
  // after the step: the replicas' values averaged, weighted by their rows.
  virtual void assign_mean(const autograd::Variable& variable, const Tensor& value) = 0;

 protected:
  ReplicaContext(int replica_id, int num_replicas) : replica_id_(replica_id), num_replicas_(num_replicas) {}
  void set_slice(int64_t row_offset, int64_t local_rows, int64_t global_rows) {
    row_offset_ = row_offset;
    local_rows_ = local_rows;
    global_rows_ = global_rows;
  }

 private:
  int replica_id_;
  int num_replicas_;
  int64_t row_offset_ = 0, local_rows_ = 0, global_rows_ = 0;
};

}  // namespace chorus::step
