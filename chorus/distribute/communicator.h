// Communicator: one participant's handle on a group that runs collectives together
// (DESIGN.md §3) — replica threads in one process (LocalCommunicator), processes across
// hosts (Gloo), later GPUs (NCCL). Each participant owns its handle and uses it from one
// thread at a time; every participant must issue the same collectives in the same order.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chorus/core/error.h"
#include "chorus/core/tensor.h"

namespace chorus::distribute {

enum class ReduceOp : uint8_t { kSum, kMax, kMin };

// A collective that cannot complete: a participant failed or aborted the group, or the
// deadline passed. The message names the operation, its sequence number and, where
// known, the ranks that never arrived. Every other participant gets one too: a failure
// never leaves the group hanging.
class CollectiveError : public Error {
  using Error::Error;
};

// The completion of an asynchronous collective. wait() returns once this participant's
// output is ready (rethrowing the collective's CollectiveError); calling it twice is fine.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "local" or "gloo": for messages and benchmarks.
  virtual std::string backend() const = 0;

  // Collectives on contiguous float32 tensors. The async form starts the operation and
  // returns at once; tensors must stay alive and untouched until wait() returns.
  // Reductions add in rank order (0 + 1 + 2 ...), so results are identical bit for bit
  // on every participant and in every run, whatever the timing.
  //
  // In place: every participant's `tensor` becomes the element-wise reduction over all.
  virtual std::unique_ptr<Work> all_reduce_async(Tensor tensor, ReduceOp op = ReduceOp::kSum) = 0;
  // In place: every participant's `tensor` becomes root's.
  virtual std::unique_ptr<Work> broadcast_async(Tensor tensor, int root) = 0;
  // `output` holds size() * input.numel() elements: participant r's input at block r.
  virtual std::unique_ptr<Work> all_gather_async(Tensor input, Tensor output) = 0;
  // `input` holds size() * output.numel() elements; participant r's output is block r of
  // the reduction of every participant's input.
  virtual std::unique_ptr<Work> reduce_scatter_async(Tensor input, Tensor output, ReduceOp op = ReduceOp::kSum) = 0;
  // Completes when every participant has called it.
  virtual std::unique_ptr<Work> barrier_async() = 0;

  // The blocking forms. A backend may run them on the calling thread when nothing else
  // is in flight, sparing the hand-off to its own thread (Gloo does).
  virtual void all_reduce(Tensor tensor, ReduceOp op = ReduceOp::kSum) {
    all_reduce_async(std::move(tensor), op)->wait();
  }
  virtual void broadcast(Tensor tensor, int root) { broadcast_async(std::move(tensor), root)->wait(); }
  virtual void all_gather(Tensor input, Tensor output) {
    all_gather_async(std::move(input), std::move(output))->wait();
  }
  virtual void reduce_scatter(Tensor input, Tensor output, ReduceOp op = ReduceOp::kSum) {
    reduce_scatter_async(std::move(input), std::move(output), op)->wait();
  }
  virtual void barrier() { barrier_async()->wait(); }

  // Personalised exchange of byte buffers (all-to-all-v): `send[r]` goes to participant r,
  // and the result's block r is what participant r sent here; sizes may differ. Blocking.
  // REQUIRES: send.size() == size(). The default builds it from all_gather (every block
  // padded to the largest: correct on any backend, but each participant receives every
  // block); Gloo overrides it with its alltoallv.
  virtual std::vector<std::vector<std::byte>> all_to_all(const std::vector<std::vector<std::byte>>& send);

  // Fails every pending and future collective of the whole group with CollectiveError
  // carrying `reason` (a replica that threw calls it so the others do not wait forever).
  virtual void abort(const std::string& reason) = 0;
};

// Throws ValueError unless there is one buffer to send per participant.
void check_all_to_all_send(const std::vector<std::vector<std::byte>>& send, int size);

}  // namespace chorus::distribute
