#include "chorus/comm/local_communicator.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <thread>
#include <vector>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/core/creation.h"
#include "tests/comm/typed_collectives.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::comm {
namespace {

using namespace testing::test_names;
using Comms = std::vector<std::unique_ptr<Communicator>>;

// Short enough that a bug fails the test instead of hanging the suite.
constexpr Seconds kTestTimeout{30};
const std::vector<int64_t> kLengths = {0, 1, 7, 1023, (1 << 20) + 3};

// Runs fn(rank, communicator) on one thread per rank (one intra-op thread each), each
// starting after a pseudo-random delay when delay_seed != 0; rethrows the first exception.
template <class Fn>
void run_ranks(Comms& comms, Fn fn, uint64_t delay_seed = 0) {
  std::vector<std::exception_ptr> errors(comms.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      backend::cpu::set_intra_op_threads(1);
      if (delay_seed != 0) {
        std::this_thread::sleep_for(std::chrono::microseconds((delay_seed * 7919 + r * 1931) % 3000));
      }
      try {
        fn(static_cast<int>(r), *comms[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// Per-rank inputs with mixed signs and magnitudes, so summation order changes the bits.
std::vector<Tensor> rank_inputs(int size, int64_t n, uint64_t seed) {
  std::vector<Tensor> inputs;
  for (int r = 0; r < size; ++r) inputs.push_back(random_tensor({n}, seed + static_cast<uint64_t>(r) * 101, -1e3, 1e3));
  return inputs;
}

// The reference: element-wise reduction in rank order.
std::vector<float> reference_reduce(const std::vector<Tensor>& inputs, ReduceOp op) {
  std::vector<float> acc = inputs[0].to_vector<float>();
  for (size_t r = 1; r < inputs.size(); ++r) {
    const std::vector<float> x = inputs[r].to_vector<float>();
    for (size_t i = 0; i < acc.size(); ++i) {
      if (op == ReduceOp::kSum) acc[i] = acc[i] + x[i];
      if (op == ReduceOp::kMax) acc[i] = std::isnan(x[i]) || x[i] > acc[i] ? x[i] : acc[i];
      if (op == ReduceOp::kMin) acc[i] = std::isnan(x[i]) || x[i] < acc[i] ? x[i] : acc[i];
    }
  }
  return acc;
}

// Bitwise equality (NaN included).
bool same_bits(const Tensor& t, const std::vector<float>& expected) {
  const std::vector<float> got = t.to_vector<float>();
  return got.size() == expected.size() &&
         (got.empty() || std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0);
}

Tensor tensors_of(const std::vector<float>& values) {
  return from_values(values, Shape{static_cast<int64_t>(values.size())});
}

std::vector<Tensor> clones(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.clone());
  return out;
}

TEST(LocalCommunicatorTest, HandlesKnowTheirRankSizeAndBackend) {
  Comms comms = make_local_communicators(3, kTestTimeout);
  ASSERT_EQ(comms.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(comms[r]->rank(), r);
    EXPECT_EQ(comms[r]->size(), 3);
    EXPECT_EQ(comms[r]->backend(), "local");
  }
}

TEST(LocalCommunicatorTest, AllReduceSumIsTheRankOrderSumBitForBit) {
  for (int size = 1; size <= 4; ++size) {
    for (int64_t n : kLengths) {
      Comms comms = make_local_communicators(size, kTestTimeout);
      const std::vector<Tensor> inputs = rank_inputs(size, n, 17 + static_cast<uint64_t>(n));
      const std::vector<float> expected = reference_reduce(inputs, ReduceOp::kSum);
      std::vector<Tensor> tensors = clones(inputs);
      run_ranks(comms, [&](int r, Communicator& c) { c.all_reduce(tensors[r]); });
      for (int r = 0; r < size; ++r) EXPECT_TRUE(same_bits(tensors[r], expected)) << "size " << size << " n " << n;
    }
  }
}

TEST(LocalCommunicatorTest, AllReduceMaxAndMinPropagateNaN) {
  for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kMin}) {
    for (int size = 1; size <= 4; ++size) {
      Comms comms = make_local_communicators(size, kTestTimeout);
      std::vector<Tensor> inputs = rank_inputs(size, 1023, 5);
      inputs[size - 1].data<float>()[100] = std::numeric_limits<float>::quiet_NaN();
      const std::vector<float> expected = reference_reduce(inputs, op);
      ASSERT_TRUE(std::isnan(expected[100]));
      std::vector<Tensor> tensors = clones(inputs);
      run_ranks(comms, [&](int r, Communicator& c) { c.all_reduce(tensors[r], op); });
      for (int r = 0; r < size; ++r) EXPECT_TRUE(same_bits(tensors[r], expected)) << "size " << size;
    }
  }
}

TEST(LocalCommunicatorTest, ResultsAreIdenticalWhateverTheThreadTiming) {
  const std::vector<Tensor> inputs = rank_inputs(4, 100003, 9);
  std::vector<float> first;
  for (uint64_t run = 1; run <= 6; ++run) {
    Comms comms = make_local_communicators(4, kTestTimeout);
    std::vector<Tensor> tensors = clones(inputs);
    run_ranks(comms, [&](int r, Communicator& c) { c.all_reduce(tensors[r]); }, /*delay_seed=*/run);
    if (first.empty()) first = tensors[0].to_vector<float>();
    for (const Tensor& t : tensors) EXPECT_TRUE(same_bits(t, first)) << "run " << run;
  }
  EXPECT_TRUE(same_bits(tensors_of(first), reference_reduce(inputs, ReduceOp::kSum)));
  // The inputs make the order observable: reverse rank order gives other bits.
  const std::vector<Tensor> reversed(inputs.rbegin(), inputs.rend());
  EXPECT_FALSE(same_bits(tensors_of(first), reference_reduce(reversed, ReduceOp::kSum)));
}

TEST(LocalCommunicatorTest, AllReduceOnViewsWithUnalignedOffsets) {
  Comms comms = make_local_communicators(2, kTestTimeout);
  std::vector<Tensor> bases = rank_inputs(2, 7 * 13, 23);
  std::vector<Tensor> views = {bases[0].view({7, 13}).first_axis_slice(3, 6),
                               bases[1].view({7, 13}).first_axis_slice(1, 4)};
  const std::vector<float> expected = reference_reduce(clones(views), ReduceOp::kSum);
  run_ranks(comms, [&](int r, Communicator& c) { c.all_reduce(views[r]); });
  EXPECT_TRUE(same_bits(views[0], expected));
  EXPECT_TRUE(same_bits(views[1], expected));
}

TEST(LocalCommunicatorTest, BroadcastCopiesTheRootsTensorToEveryRank) {
  for (int size = 1; size <= 4; ++size) {
    for (int root = 0; root < size; ++root) {
      for (int64_t n : {int64_t{0}, int64_t{7}, int64_t{1023}, int64_t{(1 << 20) + 3}}) {
        Comms comms = make_local_communicators(size, kTestTimeout);
        std::vector<Tensor> tensors = rank_inputs(size, n, 31);
        const std::vector<float> expected = tensors[root].to_vector<float>();
        run_ranks(comms, [&](int r, Communicator& c) { c.broadcast(tensors[r], root); });
        for (int r = 0; r < size; ++r) EXPECT_TRUE(same_bits(tensors[r], expected)) << size << " " << root << " " << n;
      }
    }
  }
}

TEST(LocalCommunicatorTest, AllGatherPlacesRankRsInputAtBlockR) {
  for (int size = 1; size <= 4; ++size) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1023}}) {
      Comms comms = make_local_communicators(size, kTestTimeout);
      const std::vector<Tensor> inputs = rank_inputs(size, n, 41);
      std::vector<float> expected;
      for (const Tensor& t : inputs) {
        const std::vector<float> v = t.to_vector<float>();
        expected.insert(expected.end(), v.begin(), v.end());
      }
      std::vector<Tensor> outputs;
      for (int r = 0; r < size; ++r) outputs.push_back(full({size, n}, -1.0));
      run_ranks(comms, [&](int r, Communicator& c) { c.all_gather(inputs[r], outputs[r]); });
      for (int r = 0; r < size; ++r) EXPECT_TRUE(same_bits(outputs[r], expected)) << size << " " << n;
    }
  }
}

// Rank `from`'s message to rank `to`: its own length (0 included) and bytes.
std::vector<std::byte> local_message(int from, int to) {
  std::vector<std::byte> out(static_cast<size_t>((from * 3 + to * 5) % 11));
  for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<std::byte>(from * 16 + to + static_cast<int>(k));
  return out;
}

TEST(LocalCommunicatorTest, AllToAllDeliversEachRanksMessageToItsAddressee) {
  for (int size = 1; size <= 4; ++size) {
    Comms comms = make_local_communicators(size, kTestTimeout);
    run_ranks(comms, [&](int r, Communicator& c) {
      std::vector<std::vector<std::byte>> send;
      for (int to = 0; to < size; ++to) send.push_back(local_message(r, to));
      const auto received = c.all_to_all(send);
      ASSERT_EQ(received.size(), static_cast<size_t>(size));
      for (int from = 0; from < size; ++from) EXPECT_EQ(received[static_cast<size_t>(from)], local_message(from, r));
    });
  }
  Comms comms = make_local_communicators(2, kTestTimeout);
  EXPECT_THAT([&] { comms[0]->all_to_all({{}}); },
              ThrowsMessage<ValueError>(HasSubstr("all_to_all: 1 buffers to send for a group of 2 participants")));
}

TEST(LocalCommunicatorTest, ReduceScatterGivesRankRBlockROfTheReduction) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
    for (int size = 1; size <= 4; ++size) {
      for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1023}}) {
        Comms comms = make_local_communicators(size, kTestTimeout);
        const std::vector<Tensor> inputs = rank_inputs(size, size * n, 53);
        const std::vector<float> reduced = reference_reduce(inputs, op);
        std::vector<Tensor> outputs;
        for (int r = 0; r < size; ++r) outputs.push_back(full({n}, -1.0));
        run_ranks(comms, [&](int r, Communicator& c) { c.reduce_scatter(inputs[r], outputs[r], op); });
        for (int r = 0; r < size; ++r) {
          const std::vector<float> block(reduced.begin() + r * n, reduced.begin() + (r + 1) * n);
          EXPECT_TRUE(same_bits(outputs[r], block)) << size << " " << n;
        }
      }
    }
  }
}

TEST(LocalCommunicatorTest, BarrierWaitsForEveryRank) {
  Comms comms = make_local_communicators(4, kTestTimeout);
  std::vector<std::atomic<int>> before(4);
  run_ranks(comms, [&](int r, Communicator& c) {
    for (int round = 1; round <= 20; ++round) {
      before[r].store(round);
      c.barrier();
      for (int q = 0; q < 4; ++q) EXPECT_GE(before[q].load(), round);
      c.barrier();  // nobody starts the next round before everyone checked this one
    }
  }, /*delay_seed=*/3);
}

TEST(LocalCommunicatorTest, SeveralOutstandingAsyncCollectivesCompleteInIssueOrder) {
  constexpr int kSize = 3, kBuckets = 5;
  Comms comms = make_local_communicators(kSize, kTestTimeout);
  std::vector<std::vector<Tensor>> buckets;  // [bucket][rank]
  std::vector<std::vector<float>> expected;
  for (int b = 0; b < kBuckets; ++b) {
    buckets.push_back(rank_inputs(kSize, 1000 + 37 * b, 61 + static_cast<uint64_t>(b)));
    expected.push_back(reference_reduce(buckets.back(), ReduceOp::kSum));
  }
  std::vector<Tensor> same = rank_inputs(kSize, 129, 71);  // reduced twice in a row
  std::vector<float> twice = reference_reduce(same, ReduceOp::kSum);
  twice = reference_reduce(std::vector<Tensor>(kSize, tensors_of(twice)), ReduceOp::kSum);
  run_ranks(comms, [&](int r, Communicator& c) {
    std::vector<std::unique_ptr<Work>> works;
    for (int b = 0; b < kBuckets; ++b) works.push_back(c.all_reduce_async(buckets[b][r]));
    works.push_back(c.all_reduce_async(same[r]));
    works.push_back(c.all_reduce_async(same[r]));
    std::unique_ptr<Work> dropped = c.barrier_async();
    dropped.reset();  // never waited: the next wait completes it
    std::unique_ptr<Work> last = c.barrier_async();
    // Wait out of order, and twice.
    last->wait();
    for (int i = static_cast<int>(works.size()) - 1; i >= 0; --i) works[i]->wait();
    works[0]->wait();
  }, /*delay_seed=*/5);
  for (int b = 0; b < kBuckets; ++b) {
    for (int r = 0; r < kSize; ++r) EXPECT_TRUE(same_bits(buckets[b][r], expected[b])) << "bucket " << b;
  }
  for (int r = 0; r < kSize; ++r) EXPECT_TRUE(same_bits(same[r], twice));
}

// Runs fn on every rank and returns each rank's CollectiveError message ("" if none).
template <class Fn>
std::vector<std::string> collective_errors(Comms& comms, Fn fn) {
  std::vector<std::string> messages(comms.size());
  run_ranks(comms, [&](int r, Communicator& c) {
    try {
      fn(r, c);
    } catch (const CollectiveError& e) {
      messages[r] = e.what();
    }
  });
  return messages;
}

TEST(LocalCommunicatorTest, MismatchedArgumentsFailOnEveryRankAndLaterCollectivesRun) {
  Comms comms = make_local_communicators(3, kTestTimeout);
  std::vector<Tensor> ok = rank_inputs(3, 8, 83);
  const std::vector<float> expected = reference_reduce(ok, ReduceOp::kSum);
  const std::vector<std::string> errors = collective_errors(comms, [&](int r, Communicator& c) {
    std::unique_ptr<Work> bad = c.all_reduce_async(zeros({r == 1 ? 12 : 10}));
    c.all_reduce(ok[r]);
    bad->wait();
  });
  for (const std::string& e : errors) {
    EXPECT_THAT(e, AllOf(HasSubstr("all_reduce #0: ranks disagree"), HasSubstr("all_reduce(12 float32 elements, sum)"),
                         HasSubstr("all_reduce(10 float32 elements, sum)")));
  }
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(same_bits(ok[r], expected));
}

TEST(LocalCommunicatorTest, MismatchedKindRootOrOpNamesBothCalls) {
  Comms comms = make_local_communicators(2, kTestTimeout);
  auto kind = collective_errors(comms, [&](int r, Communicator& c) {
    r == 0 ? c.all_reduce(zeros({4})) : c.broadcast(zeros({4}), 0);
  });
  for (const std::string& e : kind) {
    EXPECT_THAT(e, AllOf(HasSubstr("#0: ranks disagree"), HasSubstr("all_reduce(4 float32 elements, sum)"),
                         HasSubstr("broadcast(4 float32 elements, root 0)")));
  }
  auto root = collective_errors(comms, [&](int r, Communicator& c) { c.broadcast(zeros({4}), r); });
  for (const std::string& e : root) EXPECT_THAT(e, AllOf(HasSubstr("broadcast #1"), HasSubstr("root 1")));
  auto op = collective_errors(comms, [&](int r, Communicator& c) {
    c.reduce_scatter(zeros({4}), zeros({2}), r == 0 ? ReduceOp::kSum : ReduceOp::kMax);
  });
  for (const std::string& e : op) {
    EXPECT_THAT(e, AllOf(HasSubstr("reduce_scatter #2"), HasSubstr("2 float32 elements, sum"), HasSubstr("2 float32 elements, max")));
  }
}

TEST(LocalCommunicatorTest, MismatchedElementTypesNameBothCalls) {
  Comms comms = make_local_communicators(2, kTestTimeout);
  auto errors = collective_errors(comms, [&](int r, Communicator& c) {
    std::vector<int64_t> wide(4);
    std::vector<int32_t> narrow(4);
    r == 0 ? c.all_reduce(std::span(wide)) : c.all_reduce(std::span(narrow));
  });
  for (const std::string& e : errors) {
    EXPECT_THAT(e, AllOf(HasSubstr("all_reduce #0: ranks disagree"), HasSubstr("all_reduce(4 int64 elements, sum)"),
                         HasSubstr("all_reduce(4 int32 elements, sum)")));
  }
}

TEST(LocalCommunicatorTest, EveryCollectiveMovesEveryElementType) {
  for (int size : {1, 2, 3}) {
    for (int64_t bytes : {int64_t{0}, int64_t{40}, int64_t{40000}}) {  // 40000: several pieces and chunks
      Comms comms = make_local_communicators(size, kTestTimeout);
      run_ranks(comms, [&](int r, Communicator& c) { typed_checks::expect_typed_collectives(r, size, bytes, c); });
    }
  }
}

TEST(LocalCommunicatorTest, AbortFailsEveryPendingAndLaterCollectiveOnEveryRank) {
  Comms comms = make_local_communicators(3, kTestTimeout);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> errors = collective_errors(comms, [&](int r, Communicator& c) {
    if (r == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the others block first
      c.abort("replica 2 failed: boom");
      EXPECT_THAT([&] { c.barrier(); }, ThrowsMessage<CollectiveError>(HasSubstr("barrier #0: aborted: replica 2")));
      return;
    }
    std::unique_ptr<Work> pending = c.all_reduce_async(zeros({100}));
    EXPECT_THAT([&] { pending->wait(); },
                ThrowsMessage<CollectiveError>(HasSubstr("all_reduce #0: aborted: replica 2 failed: boom")));
    c.barrier();  // a later collective fails too
  });
  EXPECT_THAT(errors[0], HasSubstr("barrier #1: aborted: replica 2 failed: boom"));
  EXPECT_THAT(errors[1], HasSubstr("barrier #1: aborted: replica 2 failed: boom"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));  // no wait for the deadline
}

TEST(LocalCommunicatorTest, TimeoutNamesTheRanksThatNeverArrived) {
  Comms comms = make_local_communicators(4, std::chrono::milliseconds(200));
  const std::vector<std::string> errors = collective_errors(comms, [&](int r, Communicator& c) {
    if (r != 1 && r != 3) c.all_reduce(zeros({16}));
  });
  for (int r : {0, 2}) {
    EXPECT_THAT(errors[r],
                AllOf(HasSubstr("all_reduce #0"), HasSubstr("timed out after 0.2 s waiting for ranks 1, 3")));
  }
  // The group is aborted with that reason: a late rank fails at once.
  EXPECT_THAT([&] { comms[1]->all_reduce(zeros({16})); },
              ThrowsMessage<CollectiveError>(HasSubstr("all_reduce #0: aborted: all_reduce #0: timed out")));
}

TEST(LocalCommunicatorTest, TimeoutNamesARankThatIssuedButNeverWaited) {
  Comms comms = make_local_communicators(2, std::chrono::milliseconds(200));
  std::unique_ptr<Work> never_waited;
  const std::vector<std::string> errors = collective_errors(comms, [&](int r, Communicator& c) {
    if (r == 1) never_waited = c.all_reduce_async(zeros({16}));
    else c.all_reduce(zeros({16}));
  });
  EXPECT_THAT(errors[0], HasSubstr("all_reduce #0: timed out after 0.2 s waiting for rank 1 to do their share"));
}

TEST(LocalCommunicatorTest, BadLocalArgumentsNameTheOp) {
  Comms comms = make_local_communicators(2, kTestTimeout);
  Communicator& c = *comms[0];
  EXPECT_THAT([&] { c.all_reduce(Tensor::from_strings({"a", "b"})); },
              ThrowsMessage<DTypeError>(HasSubstr(
                  "all_reduce: tensor is a string tensor (2,); collectives move numbers and bytes")));
  EXPECT_THAT([&] { c.all_reduce(zeros({3}, kBool)); },
              ThrowsMessage<ValueError>(HasSubstr("all_reduce: a sum of bytes (3 bytes) is refused")));
  EXPECT_THAT([&] { c.all_reduce(Tensor()); },
              ThrowsMessage<ValueError>(HasSubstr("all_reduce: tensor is an undefined tensor")));
  EXPECT_THAT([&] { c.broadcast(zeros({3}), 2); },
              ThrowsMessage<ValueError>(HasSubstr("broadcast: expected root in [0, 2), got 2")));
  EXPECT_THAT([&] { c.all_gather(zeros({3}), zeros({5})); },
              ThrowsMessage<ShapeError>(HasSubstr(
                  "all_gather: expected output with 2 x 3 = 6 elements (ranks x input elements), got 5")));
  EXPECT_THAT([&] { c.reduce_scatter(zeros({7}), zeros({3})); },
              ThrowsMessage<ShapeError>(HasSubstr("reduce_scatter: expected input with 2 x 3 = 6 elements")));
  EXPECT_THAT([&] { c.all_gather(zeros({3}, kInt64), zeros({6})); },
              ThrowsMessage<DTypeError>(HasSubstr("all_gather: output holds float32 and input int64; expected one type")));
  EXPECT_THAT([&] { make_local_communicators(0); },
              ThrowsMessage<ValueError>(HasSubstr("make_local_communicators: expected size >= 1, got 0")));
  EXPECT_THAT([&] { make_local_communicators(2, Seconds(0)); },
              ThrowsMessage<ValueError>(HasSubstr("expected a positive timeout")));
  // An infinite deadline is allowed (no clock overflow).
  Comms patient = make_local_communicators(2, Seconds(std::numeric_limits<double>::infinity()));
  run_ranks(patient, [](int, Communicator& comm) { comm.barrier(); });
  // A rejected call consumes no sequence number: the group still works.
  std::vector<Tensor> t = rank_inputs(2, 5, 3);
  const std::vector<float> expected = reference_reduce(t, ReduceOp::kSum);
  run_ranks(comms, [&](int r, Communicator& comm) { comm.all_reduce(t[r]); });
  EXPECT_TRUE(same_bits(t[0], expected));
}

TEST(LocalCommunicatorTest, TimeoutComesFromTheEnvironment) {
  const char* saved = std::getenv("CHORUS_COLLECTIVE_TIMEOUT");
  const std::string saved_value = saved ? saved : "";
  ::unsetenv("CHORUS_COLLECTIVE_TIMEOUT");
  EXPECT_EQ(collective_timeout_from_env().count(), 300.0);
  ::setenv("CHORUS_COLLECTIVE_TIMEOUT", "0.5", 1);
  EXPECT_EQ(collective_timeout_from_env().count(), 0.5);
  ::setenv("CHORUS_COLLECTIVE_TIMEOUT", "soon", 1);
  EXPECT_THAT([] { collective_timeout_from_env(); },
              ThrowsMessage<ValueError>(
                  HasSubstr("CHORUS_COLLECTIVE_TIMEOUT: expected a positive number of seconds, got 'soon'")));
  if (saved) ::setenv("CHORUS_COLLECTIVE_TIMEOUT", saved_value.c_str(), 1);
  else ::unsetenv("CHORUS_COLLECTIVE_TIMEOUT");
}

}  // namespace
}  // namespace chorus::comm
