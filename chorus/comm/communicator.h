// Communicator: one participant's handle on a group that runs collectives together
// (DESIGN.md §3) — replica threads in one process (LocalCommunicator), processes across
// hosts (Gloo), later GPUs (NCCL). Each participant owns its handle and uses it from one
// thread at a time; every participant must issue the same collectives in the same order.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "chorus/core/error.h"
#include "chorus/core/tensor.h"

namespace chorus::comm {

// Max and min propagate NaN from any rank. Bytes are moved, never added: a sum of bytes is
// refused (max and min compare them as unsigned, e.g. "did any rank fail").
enum class ReduceOp : uint8_t { kSum, kMax, kMin };

// The element types collectives move. kBytes is raw data of any kind (a bool is one byte).
enum class ElementType : uint8_t { kFloat32, kFloat64, kBFloat16, kInt32, kInt64, kBytes };

size_t element_size(ElementType type);
// "float32", "float64", "bfloat16", "int32", "int64", "bytes".
const char* element_type_name(ElementType type);

template <class T> struct ElementTypeOf;
template <> struct ElementTypeOf<float> { static constexpr ElementType value = ElementType::kFloat32; };
template <> struct ElementTypeOf<double> { static constexpr ElementType value = ElementType::kFloat64; };
template <> struct ElementTypeOf<bfloat16> { static constexpr ElementType value = ElementType::kBFloat16; };
template <> struct ElementTypeOf<int32_t> { static constexpr ElementType value = ElementType::kInt32; };
template <> struct ElementTypeOf<int64_t> { static constexpr ElementType value = ElementType::kInt64; };
template <> struct ElementTypeOf<std::byte> { static constexpr ElementType value = ElementType::kBytes; };
template <> struct ElementTypeOf<uint8_t> { static constexpr ElementType value = ElementType::kBytes; };

// The memory a collective reads or writes in place: `count` elements of `type` at `data`,
// contiguous. Made from a Tensor (its dtype decides the type: a bool tensor is bytes, a
// string tensor is refused), which it keeps alive for an asynchronous collective, or from
// a span, whose memory the caller keeps alive and untouched until the Work completes.
struct Buffer {
  void* data = nullptr;
  int64_t count = 0;
  ElementType type = ElementType::kFloat32;
  Tensor tensor;         // the owner, when made from one
  std::string refused;   // why the tensor cannot take part ("an undefined tensor"); checked by check_buffer

  Buffer() = default;
  Buffer(Tensor t);  // NOLINT(google-explicit-constructor): collectives take tensors as they are
  template <class T, size_t N>
  Buffer(std::span<T, N> values)  // NOLINT(google-explicit-constructor)
      : data(const_cast<std::remove_const_t<T>*>(values.data())),
        count(static_cast<int64_t>(values.size())),
        type(ElementTypeOf<std::remove_const_t<T>>::value) {}

  int64_t bytes() const { return count * static_cast<int64_t>(element_size(type)); }
  // describe_elements(count, type).
  std::string to_string() const;
};

// "1024 float32 elements", "16 bytes": for messages.
std::string describe_elements(int64_t count, ElementType type);

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

// `work` timed, for a profile recording now (profiler/profiler.h), as one "collective"
// event named `op` from now until wait() returns; `work` itself otherwise.
std::unique_ptr<Work> traced(const char* op, std::unique_ptr<Work> work);

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "local" or "gloo": for messages and benchmarks.
  virtual std::string backend() const = 0;

  // Collectives on contiguous buffers of any ElementType. The async form starts the
  // operation and returns at once; the memory must stay untouched until wait() returns.
  // Every participant passes the same type and count (a LocalCommunicator checks; a Gloo
  // one cannot). Reductions combine in rank order (0, 1, 2 ...; bfloat16 rounds after
  // each), so results are identical bit for bit on every participant and in every run,
  // whatever the timing.
  //
  // In place: every participant's `buffer` becomes the element-wise reduction over all.
  virtual std::unique_ptr<Work> all_reduce_async(Buffer buffer, ReduceOp op = ReduceOp::kSum) = 0;
  // In place: every participant's `buffer` becomes root's.
  virtual std::unique_ptr<Work> broadcast_async(Buffer buffer, int root) = 0;
  // `output` holds size() * input.count elements: participant r's input at block r.
  virtual std::unique_ptr<Work> all_gather_async(Buffer input, Buffer output) = 0;
  // `input` holds size() * output.count elements; participant r's output is block r of
  // the reduction of every participant's input.
  virtual std::unique_ptr<Work> reduce_scatter_async(Buffer input, Buffer output, ReduceOp op = ReduceOp::kSum) = 0;
  // Completes when every participant has called it.
  virtual std::unique_ptr<Work> barrier_async() = 0;

  // The blocking forms. A backend may run them on the calling thread when nothing else
  // is in flight, sparing the hand-off to its own thread (Gloo does).
  virtual void all_reduce(Buffer buffer, ReduceOp op = ReduceOp::kSum) {
    all_reduce_async(std::move(buffer), op)->wait();
  }
  virtual void broadcast(Buffer buffer, int root) { broadcast_async(std::move(buffer), root)->wait(); }
  virtual void all_gather(Buffer input, Buffer output) {
    all_gather_async(std::move(input), std::move(output))->wait();
  }
  virtual void reduce_scatter(Buffer input, Buffer output, ReduceOp op = ReduceOp::kSum) {
    reduce_scatter_async(std::move(input), std::move(output), op)->wait();
  }
  virtual void barrier() { barrier_async()->wait(); }

  // Every participant's `mine`, in rank order; sizes may differ. Blocking: the sizes, then
  // the buffers padded to the largest.
  std::vector<std::vector<std::byte>> all_gather_bytes(std::span<const std::byte> mine);

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

// Throws naming `op` and `what` ("tensor", "input") for a tensor that cannot take part
// (undefined: ValueError; a string: DTypeError; not on the CPU: ValueError), and
// check_reduction for a sum of bytes (ReduceOp's comment says why).
void check_buffer(const char* op, const char* what, const Buffer& buffer);
void check_reduction(const char* op, const Buffer& buffer, ReduceOp reduce);
// `big` must hold `size` blocks of `small`: the same type, size x small.count elements.
void check_blocks(const char* op, const char* big_name, const Buffer& big, const char* small_name,
                  const Buffer& small, int size);

}  // namespace chorus::comm
