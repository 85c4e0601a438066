// GlooCommunicator's collectives (gloo_communicator.h): each operation as the Gloo
// algorithm it runs — sync-mode rings for small messages, async ones otherwise — and the
// public entry points that queue them on the communicator's thread or run them at once.
#include <algorithm>
#include <cstring>

#include <gloo/allgather.h>
#include <gloo/allgather_ring.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_ring.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/barrier_all_to_one.h>
#include <gloo/broadcast.h>
#include <gloo/broadcast_one_to_all.h>

#include "chorus/comm/gloo_communicator.h"
#include "chorus/comm/reduce_kernels.h"

namespace chorus::comm {
namespace {

// Buffers as Gloo's algorithms take them: reductions as their element type, everything
// else as bytes (moving them needs no type).
uint8_t* bytes_of(const Buffer& b) { return static_cast<uint8_t*>(b.data); }

template <ReduceOp Op>
void float_in_place(float* x, const float* y, size_t n) {
  kernels::reduce<float, Op>(x, x, y, n);
}

// chorus's float32 reductions (kernels::combine: NaN propagates) for Gloo's sync ring.
const gloo::ReductionFunction<float>* ring_reduction(ReduceOp op) {
  static const gloo::ReductionFunction<float> kSum(gloo::SUM, &float_in_place<ReduceOp::kSum>);
  static const gloo::ReductionFunction<float> kMax(gloo::MAX, &float_in_place<ReduceOp::kMax>);
  static const gloo::ReductionFunction<float> kMin(gloo::MIN, &float_in_place<ReduceOp::kMin>);
  switch (op) {
    case ReduceOp::kMax: return &kMax;
    case ReduceOp::kMin: return &kMin;
    case ReduceOp::kSum: break;
  }
  return &kSum;
}

}  // namespace

bool GlooCommunicator::sync_fits(int64_t message_bytes) const {
  return sync_context_ != nullptr && message_bytes <= options_.sync_max_bytes;
}

void GlooCommunicator::all_reduce_now(const Buffer& buffer, ReduceOp op) {
  const int64_t count = buffer.count, bytes = buffer.bytes();
  if (count == 0 || size_ == 1) return;
  if (buffer.type == ElementType::kFloat32 && size_ == 2 && sync_fits(bytes)) {
    // Two ranks add x0 + x1 and x1 + x0: the same bits on both.
    gloo::AllreduceRing<float> ring(sync_context_, {static_cast<float*>(buffer.data)}, static_cast<int>(count),
                                    ring_reduction(op));
    ring.run();
    return;
  }
  const kernels::ReduceFn reduce = kernels::reduce_fn(buffer.type, op);
  if (size_ == 2 && sync_context_ && bytes <= options_.sync_exchange_max_bytes) {
    // Both ranks compute x0 op x1: the same bits.
    const void* theirs = exchange(buffer.data, bytes);
    if (rank_ == 0) {
      reduce(buffer.data, buffer.data, theirs, static_cast<size_t>(count));
    } else {
      reduce(buffer.data, theirs, buffer.data, static_cast<size_t>(count));
    }
    return;
  }
  if (size_ > 2 && sync_context_ && bytes * (size_ - 1) <= options_.sync_exchange_max_bytes) {
    reduce_then_broadcast(buffer, op);
    return;
  }
  gloo::AllreduceOptions options(context_);
  kernels::visit_element_type(buffer.type, [&](auto t) {
    options.setOutput(static_cast<decltype(t)*>(buffer.data), static_cast<size_t>(count));
  });
  options.setReduceFunction(reduce);
  // Two workers: the ring (measured faster at 16M floats, 41 vs 52 ms); more: bcube
  // above bcube_above, whose fewer steps pay off as ranks grow.
  options.setAlgorithm(size_ > 2 && count > options_.bcube_above ? gloo::AllreduceOptions::Algorithm::BCUBE
                                                                 : gloo::AllreduceOptions::Algorithm::RING);
  options.setTimeout(options_.timeout);
  gloo::allreduce(options);
}

const void* GlooCommunicator::exchange(const void* data, int64_t bytes) {
  const size_t words = (static_cast<size_t>(bytes) + 7) / 8;
  if (inbox_.size() < words) inbox_.resize(words);
  auto& pair = sync_context_->getPair(1 - rank_);
  const auto slot = sync_context_->nextSlot();
  auto send = pair->createSendBuffer(static_cast<int>(slot), const_cast<void*>(data), static_cast<size_t>(bytes));
  auto receive = pair->createRecvBuffer(static_cast<int>(slot), inbox_.data(), static_cast<size_t>(bytes));
  // One writer at a time: rank 0 sends while rank 1 reads, then the reverse.
  if (rank_ == 0) {
    send->send();
    send->waitSend();
    receive->waitRecv();
  } else {
    receive->waitRecv();
    send->send();
    send->waitSend();
  }
  return inbox_.data();
}

bool GlooCommunicator::all_to_all_two(const std::vector<std::vector<std::byte>>& send,
                                      std::vector<std::vector<std::byte>>& received) {
  const auto other = static_cast<size_t>(1 - rank_);
  // Sizes first, then both buffers padded to the larger.
  const auto outgoing = static_cast<int64_t>(send[other].size());
  int64_t incoming = 0;
  std::memcpy(&incoming, exchange(&outgoing, sizeof(outgoing)), sizeof(incoming));
  const int64_t padded = std::max(outgoing, incoming);
  if (padded > options_.sync_exchange_max_bytes) return false;  // both ranks see the same sizes
  std::vector<std::byte> out(static_cast<size_t>(padded));
  std::copy(send[other].begin(), send[other].end(), out.begin());
  const auto* in = static_cast<const std::byte*>(padded > 0 ? exchange(out.data(), padded) : nullptr);
  received[other].assign(in, in + incoming);
  received[static_cast<size_t>(rank_)] = send[static_cast<size_t>(rank_)];
  return true;
}

void GlooCommunicator::reduce_then_broadcast(const Buffer& buffer, ReduceOp op) {
  const auto bytes = static_cast<size_t>(buffer.bytes());
  const auto slot = static_cast<int>(sync_context_->nextSlot());
  if (rank_ == 0) {
    // Rank 0 reads each rank in turn and combines in rank order: x0 op x1 op x2 ...
    const kernels::ReduceFn reduce = kernels::reduce_fn(buffer.type, op);
    const size_t words = (bytes + 7) / 8;
    if (inbox_.size() < words) inbox_.resize(words);
    for (int r = 1; r < size_; ++r) {
      auto receive = sync_context_->getPair(r)->createRecvBuffer(slot, inbox_.data(), bytes);
      receive->waitRecv();
      reduce(buffer.data, buffer.data, inbox_.data(), static_cast<size_t>(buffer.count));
    }
  } else {
    auto send = sync_context_->getPair(0)->createSendBuffer(slot, buffer.data, bytes);
    send->send();
    send->waitSend();
  }
  gloo::BroadcastOneToAll<uint8_t> broadcast(sync_context_, {bytes_of(buffer)}, bytes, 0);
  broadcast.run();
}

GlooCommunicator::Run GlooCommunicator::make_all_reduce(Buffer buffer, ReduceOp op) {
  check_buffer("all_reduce", "tensor", buffer);
  check_reduction("all_reduce", buffer, op);
  return [this, buffer = std::move(buffer), op] { all_reduce_now(buffer, op); };
}

GlooCommunicator::Run GlooCommunicator::make_broadcast(Buffer buffer, int root) {
  check_buffer("broadcast", "tensor", buffer);
  if (root < 0 || root >= size_) throw_error<ValueError>("broadcast: root {} is not a rank of {}", root, size_);
  return [this, buffer = std::move(buffer), root] {
    const auto bytes = static_cast<size_t>(buffer.bytes());
    if (bytes == 0 || size_ == 1) return;
    if (sync_context_) {
      // Only the root writes, to readers: safe in sync mode at any size.
      gloo::BroadcastOneToAll<uint8_t> broadcast(sync_context_, {bytes_of(buffer)}, bytes, root);
      broadcast.run();
      return;
    }
    gloo::BroadcastOptions options(context_);
    options.setOutput(bytes_of(buffer), bytes);
    options.setRoot(root);
    options.setTimeout(options_.timeout);
    gloo::broadcast(options);
  };
}

GlooCommunicator::Run GlooCommunicator::make_all_gather(Buffer input, Buffer output) {
  check_buffer("all_gather", "input", input);
  check_buffer("all_gather", "output", output);
  check_blocks("all_gather", "output", output, "input", input, size_);
  return [this, input = std::move(input), output = std::move(output)] {
    const int64_t bytes = input.bytes();
    if (bytes == 0) return;
    if (size_ == 1) {
      std::memcpy(output.data, input.data, static_cast<size_t>(bytes));
      return;
    }
    if (sync_fits(bytes)) {
      gloo::AllgatherRing<uint8_t> ring(sync_context_, {bytes_of(input)}, bytes_of(output), static_cast<int>(bytes));
      ring.run();
      return;
    }
    gloo::AllgatherOptions options(context_);
    options.setInput(bytes_of(input), static_cast<size_t>(bytes));
    options.setOutput(bytes_of(output), static_cast<size_t>(output.bytes()));
    options.setTimeout(options_.timeout);
    gloo::allgather(options);
  };
}

GlooCommunicator::Run GlooCommunicator::make_reduce_scatter(Buffer input, Buffer output, ReduceOp op) {
  check_buffer("reduce_scatter", "input", input);
  check_buffer("reduce_scatter", "output", output);
  check_blocks("reduce_scatter", "input", input, "output", output, size_);
  check_reduction("reduce_scatter", input, op);
  return [this, input = std::move(input), output = std::move(output), op] {
    const int64_t n = output.count, block_bytes = output.bytes();
    if (n == 0) return;
    const kernels::ReduceFn reduce = kernels::reduce_fn(input.type, op);
    auto block = [&](const Buffer& b, int r) { return static_cast<const std::byte*>(b.data) + r * block_bytes; };
    if (size_ == 2 && sync_context_) {
      // Each rank sends the block the other keeps and combines the one it receives, both
      // as x0 op x1, in pieces that fit the exchange: a true reduce-scatter, half an
      // all-reduce's traffic, with no copy of the input.
      const auto element = static_cast<int64_t>(element_size(input.type));
      const int64_t piece = std::max(element, options_.sync_exchange_max_bytes / element * element);
      for (int64_t done = 0; done < block_bytes; done += piece) {
        const int64_t bytes = std::min(piece, block_bytes - done);
        const std::byte* mine = block(input, rank_) + done;
        const void* theirs = exchange(block(input, 1 - rank_) + done, bytes);
        void* out = static_cast<std::byte*>(output.data) + done;
        if (rank_ == 0) {
          reduce(out, mine, theirs, static_cast<size_t>(bytes / element));
        } else {
          reduce(out, theirs, mine, static_cast<size_t>(bytes / element));
        }
      }
      return;
    }
    // All-reduce a copy, keep this rank's block: twice the traffic of a true
    // reduce-scatter, which this Gloo has only for its own algorithms' layouts.
    std::vector<uint64_t> copy((static_cast<size_t>(input.bytes()) + 7) / 8);
    std::memcpy(copy.data(), input.data, static_cast<size_t>(input.bytes()));
    Buffer all = input;
    all.data = copy.data();
    all.tensor = Tensor();
    all_reduce_now(all, op);
    std::memcpy(output.data, block(all, rank_), static_cast<size_t>(block_bytes));
  };
}

GlooCommunicator::Run GlooCommunicator::make_barrier() {
  return [this] {
    if (size_ == 1) return;
    if (sync_context_) {
      gloo::BarrierAllToOne barrier(sync_context_);
      barrier.run();
      return;
    }
    gloo::BarrierOptions options(context_);
    options.setTimeout(options_.timeout);
    gloo::barrier(options);
  };
}

std::unique_ptr<Work> GlooCommunicator::all_reduce_async(Buffer buffer, ReduceOp op) {
  return enqueue("all_reduce", make_all_reduce(std::move(buffer), op));
}
std::unique_ptr<Work> GlooCommunicator::broadcast_async(Buffer buffer, int root) {
  return enqueue("broadcast", make_broadcast(std::move(buffer), root));
}
std::unique_ptr<Work> GlooCommunicator::all_gather_async(Buffer input, Buffer output) {
  return enqueue("all_gather", make_all_gather(std::move(input), std::move(output)));
}
std::unique_ptr<Work> GlooCommunicator::reduce_scatter_async(Buffer input, Buffer output, ReduceOp op) {
  return enqueue("reduce_scatter", make_reduce_scatter(std::move(input), std::move(output), op));
}
std::unique_ptr<Work> GlooCommunicator::barrier_async() { return enqueue("barrier", make_barrier()); }

void GlooCommunicator::all_reduce(Buffer buffer, ReduceOp op) {
  run_now("all_reduce", make_all_reduce(std::move(buffer), op));
}
void GlooCommunicator::broadcast(Buffer buffer, int root) {
  run_now("broadcast", make_broadcast(std::move(buffer), root));
}
void GlooCommunicator::all_gather(Buffer input, Buffer output) {
  run_now("all_gather", make_all_gather(std::move(input), std::move(output)));
}
void GlooCommunicator::reduce_scatter(Buffer input, Buffer output, ReduceOp op) {
  run_now("reduce_scatter", make_reduce_scatter(std::move(input), std::move(output), op));
}
void GlooCommunicator::barrier() { run_now("barrier", make_barrier()); }

std::vector<std::vector<std::byte>> GlooCommunicator::all_to_all(const std::vector<std::vector<std::byte>>& send) {
  check_all_to_all_send(send, size_);
  std::vector<std::vector<std::byte>> received(send.size());
  run_now("all_to_all", [&] {
    if (size_ == 1) {
      received[0] = send[0];
      return;
    }
    if (size_ == 2 && sync_context_ && all_to_all_two(send, received)) return;
    std::vector<int64_t> out_sizes, in_sizes(send.size());
    std::vector<uint8_t> out;
    for (const auto& part : send) {
      out_sizes.push_back(static_cast<int64_t>(part.size()));
      const auto* bytes = reinterpret_cast<const uint8_t*>(part.data());
      out.insert(out.end(), bytes, bytes + part.size());
    }
    gloo::AlltoallOptions counts(context_);
    counts.setInput(out_sizes.data(), out_sizes.size());
    counts.setOutput(in_sizes.data(), in_sizes.size());
    counts.setTimeout(options_.timeout);
    gloo::alltoall(counts);
    int64_t total = 0;
    for (const int64_t n : in_sizes) total += n;
    std::vector<uint8_t> in(static_cast<size_t>(std::max<int64_t>(total, 1)));
    out.resize(std::max<size_t>(out.size(), 1));  // Gloo wants a buffer even when nothing goes
    gloo::AlltoallvOptions options(context_);
    options.setInput(out.data(), out_sizes);
    options.setOutput(in.data(), in_sizes);
    options.setTimeout(options_.timeout);
    gloo::alltoallv(options);
    int64_t offset = 0;
    for (size_t from = 0; from < received.size(); ++from) {
      const auto* begin = reinterpret_cast<const std::byte*>(in.data() + offset);
      received[from].assign(begin, begin + in_sizes[from]);
      offset += in_sizes[from];
    }
  });
  return received;
}

}  // namespace chorus::comm
