// The Gloo communicator between ranks on 127.0.0.1 (threads here; the multi-process
// tests live with the launcher): every collective against a reference, async ops in
// flight together, and a stalled rank named by the others' deadline errors.
#include "chorus/comm/gloo_communicator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "chorus/cluster/tcp_store.h"
#include "chorus/core/creation.h"
#include "tests/comm/typed_collectives.h"
#include "tests/testing/free_port.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::comm {
namespace {

using chorus::testing::free_port;

using namespace testing::test_names;
using namespace std::chrono_literals;

// Runs body(rank, communicator) on `size` ranks, each with its own store client.
template <class Body>
void on_ranks(int size, Body body, std::chrono::milliseconds timeout = 10s) {
  const int port = free_port();
  std::vector<std::future<void>> ranks;
  for (int rank = 0; rank < size; ++rank) {
    ranks.push_back(std::async(std::launch::async, [=] {
      cluster::ClusterSpec cluster =
          cluster::explicit_cluster({.rank = rank, .world_size = size, .master_addr = "127.0.0.1", .master_port = port});
      cluster::TcpStore store(cluster);
      GlooCommunicator communicator(cluster.rank, cluster.world_size, store, {.timeout = timeout, .hostname = "127.0.0.1"});
      body(rank, communicator);
      store.set("done/" + std::to_string(rank), {});  // rank 0 hosts the store: it waits for all
      if (rank == 0) {
        std::vector<std::string> keys;
        for (int r = 0; r < size; ++r) keys.push_back("done/" + std::to_string(r));
        store.wait(keys);
      }
    }));
  }
  for (auto& r : ranks) r.get();
}

Tensor filled(int64_t n, float value) { return full(Shape{n}, value); }

TEST(GlooCommunicatorTest, CollectivesMatchReferences) {
  on_ranks(3, [](int rank, Communicator& c) {
    EXPECT_EQ(c.backend(), "gloo");
    Tensor sum = filled(1027, static_cast<float>(rank + 1));
    c.all_reduce(sum);
    EXPECT_EQ(sum.to_vector<float>(), std::vector<float>(1027, 6.0f));
    Tensor big = filled(600000, static_cast<float>(rank + 1));  // beyond sync mode: Gloo's ring
    c.all_reduce(big);
    EXPECT_EQ(big.to_vector<float>()[599999], 6.0f);
    Tensor max = filled(5, static_cast<float>(rank));
    c.all_reduce(max, ReduceOp::kMax);
    EXPECT_EQ(max.to_vector<float>()[4], 2.0f);
    Tensor value = filled(7, static_cast<float>(rank * 10));
    c.broadcast(value, 1);
    EXPECT_EQ(value.to_vector<float>(), std::vector<float>(7, 10.0f));
    Tensor gathered = Tensor::empty(Shape{6}, kFloat32);
    c.all_gather(filled(2, static_cast<float>(rank)), gathered);
    EXPECT_EQ(gathered.to_vector<float>(), (std::vector<float>{0, 0, 1, 1, 2, 2}));
    Tensor input = from_values<float>({1, 2, 3}, Shape{3}), block = Tensor::empty(Shape{1}, kFloat32);
    c.reduce_scatter(input, block);
    EXPECT_EQ(block.to_vector<float>()[0], 3.0f * static_cast<float>(rank + 1));
    c.barrier();
  });
}

// Sync mode's small messages and the event loop's large ones (over 4 MiB for every type).
TEST(GlooCommunicatorTest, EveryCollectiveMovesEveryElementType) {
  for (int size : {2, 3}) {
    on_ranks(size, [size](int rank, Communicator& c) {
      for (int64_t bytes : {int64_t{40}, int64_t{5 << 20} + 40}) typed_checks::expect_typed_collectives(rank, size, bytes, c);
    });
  }
}

// Rank `from`'s message to rank `to` over Gloo: lengths differ, some are empty.
std::vector<std::byte> gloo_message(int from, int to) {
  std::vector<std::byte> out(static_cast<size_t>((from * 7 + to * 3) % 13) * 100);
  for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<std::byte>(from * 31 + to * 5 + static_cast<int>(k));
  return out;
}

// Rounds: the messages, nothing at all, and (on two ranks) one beyond sync mode's
// exchange limit (4 MiB), which takes Gloo's alltoallv.
void expect_all_to_all_delivers(int size) {
  on_ranks(size, [size](int rank, Communicator& c) {
    for (int round = 0; round < 3; ++round) {
      const auto message = [&](int from, int to) {
        if (round == 1) return std::vector<std::byte>();
        std::vector<std::byte> m = gloo_message(from, to);
        if (round == 2 && from == 0) m.resize(size_t{5} << 20, std::byte{7});
        return m;
      };
      std::vector<std::vector<std::byte>> send;
      for (int to = 0; to < size; ++to) send.push_back(message(rank, to));
      const auto received = c.all_to_all(send);
      ASSERT_EQ(received.size(), static_cast<size_t>(size));
      for (int from = 0; from < size; ++from) EXPECT_EQ(received[static_cast<size_t>(from)], message(from, rank));
    }
  });
}

TEST(GlooCommunicatorTest, TwoRanksReduceScatterBlocksLargerThanOneExchange) {
  // Blocks of 4 MiB + 12 bytes: two exchanges of 4 MiB and one of 12 bytes each; every
  // element the sum of both ranks' (x0 + x1, so the same bits as an all-reduce).
  constexpr int64_t block = (int64_t{4} << 20) / 4 + 3;
  on_ranks(2, [](int rank, Communicator& c) {
    std::vector<float> input(static_cast<size_t>(2 * block));
    for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(i % 1000) * 0.5F + static_cast<float>(rank);
    Tensor mine = Tensor::empty(Shape{block}, kFloat32);
    c.reduce_scatter(from_values<float>(input, Shape{2 * block}), mine);
    const std::vector<float> got = mine.to_vector<float>();
    for (int64_t i = 0; i < block; i += 997) {
      const auto at = static_cast<size_t>(rank * block + i);
      ASSERT_EQ(got[static_cast<size_t>(i)], static_cast<float>(at % 1000) * 0.5F * 2 + 1.0F) << i;
    }
    ASSERT_EQ(got.back(), static_cast<float>((static_cast<size_t>(rank * block + block - 1)) % 1000) + 1.0F);
  });
}

TEST(GlooCommunicatorTest, AllToAllDeliversEachRanksMessageToItsAddressee) {
  expect_all_to_all_delivers(2);  // sync mode's exchanges
  expect_all_to_all_delivers(3);  // Gloo's alltoall and alltoallv
}

// Two ranks take sync mode for small messages and Gloo's event loop above
// sync_max_bytes (or for everything when it is 0); the results must not depend on it.
TEST(GlooCommunicatorTest, SyncModeAndEventLoopGiveTheSameResults) {
  for (int64_t sync_bytes : {int64_t{0}, int64_t{4096}}) {
    const int port = free_port();
    std::vector<std::future<void>> ranks;
    for (int rank = 0; rank < 2; ++rank) {
      ranks.push_back(std::async(std::launch::async, [=] {
        cluster::ClusterSpec cluster =
            cluster::explicit_cluster({.rank = rank, .world_size = 2, .master_addr = "127.0.0.1", .master_port = port});
        cluster::TcpStore store(cluster);
        GlooCommunicator c(cluster.rank, cluster.world_size, store, {.timeout = 10s, .hostname = "127.0.0.1", .sync_max_bytes = sync_bytes});
        for (int64_t n : {int64_t{1}, int64_t{1024}, int64_t{1025}, int64_t{300000}, int64_t{1100000}}) {  // 1024 floats = 4 KiB; 1.1M > 4 MiB
          const std::string at = "n=" + std::to_string(n) + " sync_max_bytes=" + std::to_string(sync_bytes);
          Tensor x = testing::random_tensor(Shape{n}, 7 + rank), y = testing::random_tensor(Shape{n}, 7 + (1 - rank));
          Tensor expected = x.clone();
          float* e = expected.data<float>();
          for (int64_t i = 0; i < n; ++i) e[i] += y.data<float>()[i];
          c.all_reduce(x);
          EXPECT_EQ(x.to_vector<float>(), expected.to_vector<float>()) << at;
          Tensor gathered = Tensor::empty(Shape{2 * n}, kFloat32);
          c.all_gather(filled(n, static_cast<float>(rank + 1)), gathered);
          EXPECT_EQ(gathered.to_vector<float>()[static_cast<size_t>(n)], 2.0f) << at;
          Tensor root = filled(n, static_cast<float>(rank));
          c.broadcast(root, 1);
          EXPECT_EQ(root.to_vector<float>()[static_cast<size_t>(n - 1)], 1.0f) << at;
          if (n % 2 == 0) {
            // x is the same sum on both ranks now: each keeps twice its half of it.
            Tensor half = Tensor::empty(Shape{n / 2}, kFloat32);
            c.reduce_scatter(x, half);
            std::vector<float> twice = x.first_axis_slice(rank * n / 2, (rank + 1) * n / 2).to_vector<float>();
            for (float& v : twice) v *= 2.0f;
            EXPECT_EQ(half.to_vector<float>(), twice) << at;
          }
          // A blocking collective issued behind async ones waits its turn.
          Tensor big = filled(300000, 1.0f), small = filled(n, 1.0f);
          auto pending = c.all_reduce_async(big);
          c.all_reduce(small);
          pending->wait();
          EXPECT_EQ(big.to_vector<float>()[299999], 2.0f) << at;
          EXPECT_EQ(small.to_vector<float>()[static_cast<size_t>(n - 1)], 2.0f) << at;
          c.barrier();
        }
        store.set("done/" + std::to_string(rank), {});
        if (rank == 0) store.wait({"done/0", "done/1"});
      }));
    }
    for (auto& r : ranks) r.get();
  }
}

TEST(GlooCommunicatorTest, AsyncOperationsOverlapAndCompleteInOrder) {
  on_ranks(2, [](int rank, Communicator& c) {
    std::vector<Tensor> buckets;
    std::vector<std::unique_ptr<Work>> work;
    for (int k = 0; k < 5; ++k) {
      buckets.push_back(filled(100000, static_cast<float>(rank + k)));
      work.push_back(c.all_reduce_async(buckets.back()));
    }
    for (int k = 4; k >= 0; --k) work[static_cast<size_t>(k)]->wait();
    for (int k = 0; k < 5; ++k) EXPECT_EQ(buckets[static_cast<size_t>(k)].to_vector<float>()[99999], 1.0f + 2.0f * k);
  });
}

TEST(GlooCommunicatorTest, StalledRankIsNamedWhenTheDeadlinePasses) {
  std::vector<std::string> errors(3);
  on_ranks(
      3,
      [&](int rank, Communicator& c) {
        if (rank == 2) {
          std::this_thread::sleep_for(3500ms);  // never joins all_reduce #0
          return;
        }
        const auto start = std::chrono::steady_clock::now();
        try {
          c.all_reduce(filled(10, 1.0f));
        } catch (const CollectiveError& e) {
          errors[static_cast<size_t>(rank)] = e.what();
        }
        // Reported within the deadline (1 s) + 1 s: the stall is detected after 1.04 s
        // (measured), then 0.3 s of grace for the others' reports; the bound leaves 0.5 s
        // more for a loaded machine.
        EXPECT_LT(std::chrono::steady_clock::now() - start, 2500ms) << rank;
      },
      1s);
  for (int rank : {0, 1}) {
    EXPECT_THAT(errors[static_cast<size_t>(rank)], HasSubstr("all_reduce #0 on rank"));
    EXPECT_THAT(errors[static_cast<size_t>(rank)], HasSubstr("ranks that never arrived: 2"));
  }
}

// Sync mode blocks in the socket itself: its deadline is the socket's receive timeout.
TEST(GlooCommunicatorTest, SyncModeStallHitsTheDeadline) {
  std::string error;
  const auto start = std::chrono::steady_clock::now();
  on_ranks(
      2,
      [&](int rank, Communicator& c) {
        c.barrier();  // #0
        if (rank == 1) {
          std::this_thread::sleep_for(3500ms);  // never joins all_gather #1
          return;
        }
        try {
          Tensor out = Tensor::empty(Shape{2}, kFloat32);
          c.all_gather(filled(1, 1.0f), out);
        } catch (const CollectiveError& e) {
          error = e.what();
        }
      },
      1s);
  EXPECT_THAT(error, HasSubstr("all_gather #1 on rank 0 of 2 failed"));
  EXPECT_THAT(error, HasSubstr("ranks that never arrived: 1"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

}  // namespace
}  // namespace chorus::comm
