// LocalCommunicator: collectives among the threads of one process over shared memory.
//
// How a collective runs. Call k on every handle (its sequence number) meets in one Slot of
// the group, keyed by k. Issuing records the rank's arguments in the slot (arrival) and
// returns a Work; nothing is computed yet. Work::wait() then
//   1. waits until every rank has arrived (or the slot failed, the group aborted, or the
//      deadline passed),
//   2. does this rank's share, reading every rank's tensors in place: for all_reduce and
//      broadcast, the elements of chunk `rank` of `size` (cut on 64-byte lines so no two
//      ranks write one cache line), written into every rank's tensor; for all_gather, this
//      rank's input copied into block `rank` of every output; for reduce_scatter, block
//      `rank` of every input reduced into this rank's output,
//   3. waits until every rank's share is done, so its output is complete on return.
// Each element of a reduction is computed once, by one thread, in rank order, and copied
// to every rank: results are identical on every rank and in every run.
//
// Waiting polls for kSpin (about the cost of a futex sleep and wake-up, so replicas that
// arrive within microseconds of each other never sleep), then blocks on the group's
// condition variable until the deadline. Replica threads may outnumber cores (and other
// processes share them), so polls yield the core after a few pause instructions: a peer
// waiting for the CPU then runs at once (4 us per 1K-float all_reduce on one shared core
// instead of 50 us with pure pause spinning), and nothing spins longer than kSpin.
#include "chorus/comm/local_communicator.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "chorus/comm/reduce_kernels.h"
#include "chorus/core/env.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <fmt/format.h>

namespace chorus::comm {
namespace {

using Clock = std::chrono::steady_clock;

// Waiting before blocking (see the file comment): kPauses polls with a pause
// instruction (about a microsecond), then polls that yield the core until kSpin passed.
constexpr int kPauses = 16;
constexpr auto kSpin = std::chrono::microseconds(20);
// Chunks start on multiples of 64 bytes (one cache line on 64-byte aligned storage), so
// two ranks never write the same line.
constexpr size_t kChunkAlign = 64;

enum class Kind : uint8_t { kAllReduce, kBroadcast, kAllGather, kReduceScatter, kBarrier };

const char* kind_name(Kind kind) {
  static constexpr const char* kNames[] = {"all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier"};
  return kNames[static_cast<int>(kind)];
}

const char* op_name(ReduceOp op) {
  static constexpr const char* kNames[] = {"sum", "max", "min"};
  return kNames[static_cast<int>(op)];
}

bool is_reduction(Kind kind) { return kind == Kind::kAllReduce || kind == Kind::kReduceScatter; }

// ---- Reductions: every rank's block combined in rank order, by one thread ----

// Elements per piece: the accumulator (8 KB) stays in L1 while every input streams once.
constexpr size_t kPieceBytes = 8192;

// For j < len and every output q: out[q][j] = ((in[0][j] op in[1][j]) op in[2][j]) ..., in
// rank order. An output may be an input (all_reduce): each piece is read before it is written.
template <class T>
void reduce_pieces(std::span<const std::byte* const> in, std::span<std::byte* const> out, int64_t len,
                   kernels::ReduceFn f) {
  constexpr int64_t kPiece = kPieceBytes / sizeof(T);
  const size_t n = in.size();
  alignas(64) T acc[kPiece];
  for (int64_t p = 0; p < len; p += kPiece) {
    const auto m = static_cast<size_t>(std::min(kPiece, len - p));
    const auto at = [&](const std::byte* base) { return reinterpret_cast<const T*>(base) + p; };
    if (n == 1) {
      std::memcpy(acc, at(in[0]), m * sizeof(T));
    } else {
      f(acc, at(in[0]), at(in[1]), m);
    }
    for (size_t r = 2; r < n; ++r) f(acc, acc, at(in[r]), m);
    for (std::byte* o : out) std::memcpy(reinterpret_cast<T*>(o) + p, acc, m * sizeof(T));
  }
}

// Two ranks in place, one pass: the all_reduce of a pair of replicas (the common case).
template <class T, ReduceOp Op>
void reduce_pair_in_place(std::byte* a, std::byte* b, int64_t len) {
  auto* x = reinterpret_cast<T*>(a);
  auto* y = reinterpret_cast<T*>(b);
  for (int64_t j = 0; j < len; ++j) {
    const T s = kernels::combine<T>(Op, x[j], y[j]);
    x[j] = s;
    y[j] = s;
  }
}

void reduce_block(std::span<const std::byte* const> in, std::span<std::byte* const> out, int64_t len,
                  ElementType type, ReduceOp op) {
  if (in.size() == 1 && out.size() == 1 && in[0] == out[0]) return;  // one rank, in place
  kernels::visit_element_type(type, [&](auto t) {
    using T = decltype(t);
    if (in.size() == 2 && out.size() == 2 && in[0] == out[0] && in[1] == out[1]) {
      switch (op) {
        case ReduceOp::kSum: return reduce_pair_in_place<T, ReduceOp::kSum>(out[0], out[1], len);
        case ReduceOp::kMax: return reduce_pair_in_place<T, ReduceOp::kMax>(out[0], out[1], len);
        case ReduceOp::kMin: return reduce_pair_in_place<T, ReduceOp::kMin>(out[0], out[1], len);
      }
    }
    reduce_pieces<T>(in, out, len, kernels::reduce_fn<T>(op));
  });
}

// ---- The group ----

// One rank's arguments. In-place collectives have input == output.
struct Args {
  Kind kind = Kind::kBarrier;
  Buffer input, output;
  int64_t count = 0;  // the per-rank element count all ranks must agree on
  int root = -1;      // broadcast only
  ReduceOp op = ReduceOp::kSum;

  bool matches(const Args& other) const {
    return kind == other.kind && count == other.count && input.type == other.input.type &&
           root == other.root && (!is_reduction(kind) || op == other.op);
  }
  // "all_reduce(1024 float32 elements, sum)", "broadcast(10 bytes, root 1)", "barrier()".
  std::string to_string() const {
    const std::string elements = describe_elements(count, input.type);
    switch (kind) {
      case Kind::kAllReduce:
      case Kind::kReduceScatter: return fmt::format("{}({}, {})", kind_name(kind), elements, op_name(op));
      case Kind::kBroadcast: return fmt::format("broadcast({}, root {})", elements, root);
      case Kind::kAllGather: return fmt::format("all_gather({})", elements);
      case Kind::kBarrier: return "barrier()";
    }
    return "?";
  }
};

// One collective: the meeting point of every rank's k-th call. Fields marked "mu_" are
// written under the group mutex; `args` is read-only once `arrived` reaches size (release
// / acquire); per-rank `outcome` and `finished` are touched by that rank's thread only.
struct Slot {
  Slot(uint64_t seq, int size)
      : seq(seq), args(size), present(size, 0), share_done(size, 0), outcome(size), finished(size, 0) {}

  const uint64_t seq;
  std::vector<Args> args;         // mu_
  std::vector<char> present;      // mu_: rank has arrived
  std::vector<char> share_done;   // mu_: rank has done its share
  int first_rank = -1;            // mu_: the rank others' arguments are checked against
  int released = 0;               // mu_: ranks that finished waiting (the slot is erased at size)
  std::string mismatch;           // mu_, written once before `failed`
  std::atomic<bool> failed{false};
  std::atomic<int> arrived{0};
  std::atomic<int> done{0};
  std::vector<std::string> outcome;  // per rank: empty on success, else the error message
  std::vector<char> finished;        // per rank: participate() has run
};

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// [begin, end) of chunk `part` of `parts` over n elements of `element_bytes`, cut on
// kChunkAlign bytes.
std::pair<int64_t, int64_t> chunk(int64_t n, size_t element_bytes, int part, int parts) {
  const auto align = static_cast<int64_t>(kChunkAlign / element_bytes);
  auto cut = [&](int p) { return p == parts ? n : n * p / parts / align * align; };
  return {cut(part), cut(part + 1)};
}

std::string rank_list(const std::vector<char>& flags) {
  std::vector<int> missing;
  for (size_t r = 0; r < flags.size(); ++r) {
    if (!flags[r]) missing.push_back(static_cast<int>(r));
  }
  return fmt::format("{} {}", missing.size() == 1 ? "rank" : "ranks", fmt::join(missing, ", "));
}

// The state shared by a group's handles and Works.
class Group {
 public:
  Group(int size, Seconds timeout) : size_(size), timeout_(timeout), per_rank_(size) {}

  int size() const { return size_; }

  // Records `rank`'s next collective and returns its slot (also queued as pending).
  std::shared_ptr<Slot> arrive(int rank, Args args);
  // Completes `rank`'s pending collectives in issue order up to and including `slot`.
  void complete_through(int rank, const Slot& slot);
  void abort(const std::string& reason);

 private:
  enum class Phase { kArrival, kShares };
  enum class State { kWaiting, kReady, kFailed, kAborted };

  void participate(int rank, Slot& slot);
  // Waits for phase's counter to reach size_; returns "" or the error message.
  std::string await(int rank, Slot& slot, Phase phase, Clock::time_point deadline);
  State state(const Slot& slot, Phase phase) const;
  void run_share(int rank, const Slot& slot) const;
  void abort_locked(const std::string& reason);

  struct PerRank {  // touched by the rank's own thread only
    uint64_t next_seq = 0;
    std::deque<std::shared_ptr<Slot>> pending;
  };

  const int size_;
  const Seconds timeout_;
  std::vector<PerRank> per_rank_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, std::shared_ptr<Slot>> slots_;  // mu_
  std::string abort_reason_;                         // mu_, written once before aborted_
  std::atomic<bool> aborted_{false};
};

std::shared_ptr<Slot> Group::arrive(int rank, Args args) {
  PerRank& me = per_rank_[rank];
  const uint64_t seq = me.next_seq++;
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard lock(mu_);
    std::shared_ptr<Slot>& entry = slots_[seq];
    if (!entry) entry = std::make_shared<Slot>(seq, size_);
    slot = entry;
    if (slot->first_rank < 0) {
      slot->first_rank = rank;
    } else if (!slot->failed.load() && !args.matches(slot->args[slot->first_rank])) {
      const Args& first = slot->args[slot->first_rank];
      slot->mismatch = fmt::format("{} #{}: ranks disagree: rank {} called {}, rank {} called {}",
                                   kind_name(first.kind), seq, slot->first_rank, first.to_string(), rank,
                                   args.to_string());
      slot->failed.store(true, std::memory_order_release);
    }
    slot->args[rank] = std::move(args);
    slot->present[rank] = 1;
    slot->arrived.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  me.pending.push_back(slot);
  return slot;
}

void Group::complete_through(int rank, const Slot& slot) {
  std::deque<std::shared_ptr<Slot>>& pending = per_rank_[rank].pending;
  while (!slot.finished[rank]) {
    assert(!pending.empty());
    const std::shared_ptr<Slot> next = pending.front();
    pending.pop_front();
    participate(rank, *next);
  }
}

void Group::participate(int rank, Slot& slot) {
  // Clamped so that a huge timeout (even inf) cannot overflow the clock's nanoseconds.
  const Seconds timeout = std::min(timeout_, Seconds(1e9));
  const Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  std::string error = await(rank, slot, Phase::kArrival, deadline);
  if (error.empty()) {
    run_share(rank, slot);
    {
      std::lock_guard lock(mu_);
      slot.share_done[rank] = 1;
      slot.done.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    error = await(rank, slot, Phase::kShares, deadline);
  }
  slot.outcome[rank] = std::move(error);
  slot.finished[rank] = 1;
  std::lock_guard lock(mu_);
  if (++slot.released == size_) slots_.erase(slot.seq);
}

Group::State Group::state(const Slot& slot, Phase phase) const {
  if (phase == Phase::kArrival) {
    // An aborted group fails even a fully arrived collective: its peers may already have
    // thrown, and the trainer is shutting down.
    if (aborted_.load(std::memory_order_acquire)) return State::kAborted;
    if (slot.failed.load(std::memory_order_acquire)) return State::kFailed;
    return slot.arrived.load(std::memory_order_acquire) == size_ ? State::kReady : State::kWaiting;
  }
  // Every share done means the outputs are complete: success even if an abort followed.
  if (slot.done.load(std::memory_order_acquire) == size_) return State::kReady;
  return aborted_.load(std::memory_order_acquire) ? State::kAborted : State::kWaiting;
}

std::string Group::await(int rank, Slot& slot, Phase phase, Clock::time_point deadline) {
  State s = State::kWaiting;
  const Clock::time_point spin_until = Clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if ((s = state(slot, phase)) != State::kWaiting) break;
    if (i < kPauses) {
      cpu_relax();
    } else {
      if (Clock::now() >= spin_until) break;
      std::this_thread::yield();
    }
  }
  const char* name = kind_name(slot.args[rank].kind);
  if (s == State::kWaiting) {
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, deadline, [&] { return (s = state(slot, phase)) != State::kWaiting; });
    if (s == State::kWaiting) {
      std::string message =
          phase == Phase::kArrival
              ? fmt::format("{} #{}: timed out after {:g} s waiting for {}", name, slot.seq, timeout_.count(),
                            rank_list(slot.present))
              : fmt::format("{} #{}: timed out after {:g} s waiting for {} to do their share (issued, never waited)",
                            name, slot.seq, timeout_.count(), rank_list(slot.share_done));
      abort_locked(message);
      return message;
    }
  }
  switch (s) {
    case State::kReady: return {};
    case State::kFailed: return slot.mismatch;
    default: return fmt::format("{} #{}: aborted: {}", name, slot.seq, abort_reason_);
  }
}

void Group::run_share(int rank, const Slot& slot) const {
  const Args& mine = slot.args[rank];
  const int64_t count = mine.count;
  const size_t element = element_size(mine.input.type);
  int64_t in_offset = 0, out_offset = 0, len = count;  // the elements this share touches
  switch (mine.kind) {
    case Kind::kAllReduce:
    case Kind::kBroadcast: {
      const auto [begin, end] = chunk(count, element, rank, size_);
      in_offset = out_offset = begin;
      len = end - begin;
      break;
    }
    case Kind::kAllGather: out_offset = rank * count; break;
    case Kind::kReduceScatter: in_offset = rank * count; break;
    case Kind::kBarrier: return;
  }
  if (len == 0) return;
  std::vector<const std::byte*> in(size_);
  std::vector<std::byte*> out(size_);
  for (int r = 0; r < size_; ++r) {
    in[r] = static_cast<const std::byte*>(slot.args[r].input.data) + in_offset * static_cast<int64_t>(element);
    out[r] = static_cast<std::byte*>(slot.args[r].output.data) + out_offset * static_cast<int64_t>(element);
  }
  const size_t bytes = static_cast<size_t>(len) * element;
  switch (mine.kind) {
    case Kind::kAllReduce: reduce_block(in, out, len, mine.input.type, mine.op); break;
    case Kind::kReduceScatter:
      reduce_block(in, std::span<std::byte* const>(&out[rank], 1), len, mine.input.type, mine.op);
      break;
    case Kind::kBroadcast:
      for (int r = 0; r < size_; ++r) {
        if (r != mine.root) std::memcpy(out[r], in[mine.root], bytes);
      }
      break;
    case Kind::kAllGather:
      for (int r = 0; r < size_; ++r) std::memcpy(out[r], in[rank], bytes);
      break;
    case Kind::kBarrier: break;
  }
}

void Group::abort(const std::string& reason) {
  std::lock_guard lock(mu_);
  abort_locked(reason);
}

void Group::abort_locked(const std::string& reason) {
  if (aborted_.load()) return;  // the first reason wins
  abort_reason_ = reason;
  aborted_.store(true, std::memory_order_release);
  cv_.notify_all();
}

class LocalWork final : public Work {
 public:
  LocalWork(std::shared_ptr<Group> group, int rank, std::shared_ptr<Slot> slot)
      : group_(std::move(group)), rank_(rank), slot_(std::move(slot)) {}

  void wait() override {
    group_->complete_through(rank_, *slot_);
    const std::string& error = slot_->outcome[rank_];
    if (!error.empty()) throw CollectiveError(error);
  }

 private:
  std::shared_ptr<Group> group_;
  int rank_;
  std::shared_ptr<Slot> slot_;
};

class LocalCommunicator final : public Communicator {
 public:
  LocalCommunicator(std::shared_ptr<Group> group, int rank) : group_(std::move(group)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::string backend() const override { return "local"; }

  std::unique_ptr<Work> all_reduce_async(Buffer buffer, ReduceOp op) override {
    check_buffer("all_reduce", "tensor", buffer);
    check_reduction("all_reduce", buffer, op);
    const int64_t n = buffer.count;
    return start({.kind = Kind::kAllReduce, .input = buffer, .output = std::move(buffer), .count = n, .op = op});
  }

  std::unique_ptr<Work> broadcast_async(Buffer buffer, int root) override {
    check_buffer("broadcast", "tensor", buffer);
    if (root < 0 || root >= size()) {
      throw_error<ValueError>("broadcast: expected root in [0, {}), got {}", size(), root);
    }
    const int64_t n = buffer.count;
    return start({.kind = Kind::kBroadcast, .input = buffer, .output = std::move(buffer), .count = n, .root = root});
  }

  std::unique_ptr<Work> all_gather_async(Buffer input, Buffer output) override {
    check_buffer("all_gather", "input", input);
    check_buffer("all_gather", "output", output);
    check_blocks("all_gather", "output", output, "input", input, size());
    const int64_t n = input.count;
    return start({.kind = Kind::kAllGather, .input = std::move(input), .output = std::move(output), .count = n});
  }

  std::unique_ptr<Work> reduce_scatter_async(Buffer input, Buffer output, ReduceOp op) override {
    check_buffer("reduce_scatter", "input", input);
    check_buffer("reduce_scatter", "output", output);
    check_blocks("reduce_scatter", "input", input, "output", output, size());
    check_reduction("reduce_scatter", input, op);
    const int64_t n = output.count;
    return start({.kind = Kind::kReduceScatter, .input = std::move(input), .output = std::move(output), .count = n,
                  .op = op});
  }

  std::unique_ptr<Work> barrier_async() override { return start({.kind = Kind::kBarrier}); }

  void abort(const std::string& reason) override { group_->abort(reason); }

 private:
  std::unique_ptr<Work> start(Args args) {
    const char* op = kind_name(args.kind);
    std::shared_ptr<Slot> slot = group_->arrive(rank_, std::move(args));
    return traced(op, std::make_unique<LocalWork>(group_, rank_, std::move(slot)));
  }

  std::shared_ptr<Group> group_;
  int rank_;
};

}  // namespace

Seconds collective_timeout_from_env() {
  return Seconds(env_positive_number("CHORUS_COLLECTIVE_TIMEOUT", "a positive number of seconds").value_or(300));
}

std::vector<std::unique_ptr<Communicator>> make_local_communicators(int size, Seconds timeout) {
  if (size < 1) throw_error<ValueError>("make_local_communicators: expected size >= 1, got {}", size);
  if (!(timeout.count() > 0)) {
    throw_error<ValueError>("make_local_communicators: expected a positive timeout, got {} s", timeout.count());
  }
  auto group = std::make_shared<Group>(size, timeout);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < size; ++r) comms.push_back(std::make_unique<LocalCommunicator>(group, r));
  return comms;
}

}  // namespace chorus::comm
