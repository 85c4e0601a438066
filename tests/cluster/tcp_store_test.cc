// The rendezvous store over real TCP on 127.0.0.1, with ranks as threads: values cross
// ranks, get and wait block until set, deadlines and other jobs give clear errors, a
// worker that starts before rank 0 still joins, Gloo connects through it, and a
// launcher-hosted store keeps a restarted job's attempts apart.
#include "chorus/cluster/tcp_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include <gloo/allreduce_ring.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include "tests/testing/free_port.h"
#include "tests/testing/test_names.h"

namespace chorus::cluster {
namespace {

using chorus::testing::free_port;

using namespace testing::test_names;
using namespace std::chrono_literals;

ClusterSpec rank_of(int rank, int size, int port, std::string job = "job") {
  return explicit_cluster({.rank = rank, .world_size = size, .master_addr = "127.0.0.1", .master_port = port,
                           .job_id = std::move(job)});
}

std::vector<char> bytes(const std::string& s) { return {s.begin(), s.end()}; }

TEST(TcpStoreTest, ValuesCrossRanksAndGetWaitsForSet) {
  const int port = free_port();
  TcpStore chief(rank_of(0, 2, port));
  TcpStore worker(rank_of(1, 2, port));
  auto later = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(50ms);
    chief.set("weights", bytes("abc"));
  });
  EXPECT_EQ(worker.get("weights"), bytes("abc"));  // blocks until rank 0 sets it
  worker.set("a", {});
  worker.set("b", bytes(std::string(200000, 'x')));  // larger than one read
  chief.wait({"a", "b"});
  EXPECT_EQ(chief.get("b").size(), 200000u);
  later.get();
}

TEST(TcpStoreTest, DeadlineNamesKeysAndStore) {
  const int port = free_port();
  TcpStore chief(rank_of(0, 1, port), {.timeout = 100ms});
  EXPECT_THAT([&] { chief.wait({"never"}, 100ms); },
              ThrowsMessage<StoreError>(HasSubstr(fmt::format("rendezvous store at 127.0.0.1:{}: wait(\"never\") timed out after 100 ms", port))));
}

TEST(TcpStoreTest, AnotherJobIsRefused) {
  const int port = free_port();
  TcpStore chief(rank_of(0, 2, port, "job-a"));
  EXPECT_THAT([&] { TcpStore other(rank_of(1, 2, port, "job-b")); },
              ThrowsMessage<StoreError>(HasSubstr("this store serves job \"job-a\", but the client belongs to job \"job-b\"")));
  EXPECT_THAT([&] { TcpStore second_chief(rank_of(0, 2, port, "job-b")); },
              ThrowsMessage<StoreError>(HasSubstr("cannot listen on 127.0.0.1")));
}

TEST(TcpStoreTest, WorkerStartingBeforeRankZeroJoins) {
  const int port = free_port();
  auto worker = std::async(std::launch::async, [&] {
    TcpStore store(rank_of(1, 2, port));
    return store.get("ready");
  });
  std::this_thread::sleep_for(150ms);  // the worker is retrying its connection
  TcpStore chief(rank_of(0, 2, port));
  chief.set("ready", bytes("yes"));
  EXPECT_EQ(worker.get(), bytes("yes"));
  EXPECT_THAT([&] { TcpStore lonely(rank_of(1, 2, free_port()), {.connect_timeout = 100ms}); },
              ThrowsMessage<StoreError>(HasSubstr("cannot connect within 100 ms")));
}

TEST(TcpStoreTest, GlooRendezvousesThroughIt) {
  const int port = free_port(), size = 3;
  std::vector<std::future<std::vector<float>>> ranks;
  for (int rank = 0; rank < size; ++rank) {
    ranks.push_back(std::async(std::launch::async, [=] {
      TcpStore store(rank_of(rank, size, port));
      auto device = gloo::transport::tcp::CreateDevice("127.0.0.1");
      auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
      context->connectFullMesh(store, device);
      // Sync-mode pairs, as GlooCommunicator uses for AllreduceRing: in async mode run()
      // can return with its last notification to the left rank still queued, and a rank
      // tearing down then fails its neighbour with "Connection closed by peer".
      for (int peer = 0; peer < size; ++peer) {
        if (peer != rank) context->getPair(peer)->setSync(true, false);
      }
      std::vector<float> data(1000, static_cast<float>(rank + 1));
      gloo::AllreduceRing<float>(context, {data.data()}, static_cast<int>(data.size())).run();
      return data;
    }));
  }
  for (auto& r : ranks) {
    std::vector<float> data = r.get();
    EXPECT_EQ(data.front(), 6.0f);
    EXPECT_EQ(data.back(), 6.0f);
  }
}

TEST(TcpStoreTest, ALauncherHostedStoreKeepsAttemptsApartAndRefusesAnEarlierOnesWorkers) {
  const int port = free_port();
  TcpStoreServer server("127.0.0.1", port, "job");
  TcpStore launcher("127.0.0.1", port, "job", {.timeout = 2s});
  ClusterSpec rank0 = rank_of(0, 2, port, "job/attempt-0");
  rank0.store_on_launcher = true;  // rank 0 connects rather than listening
  TcpStore old_worker(rank0, {.timeout = 5s});
  old_worker.set("rank_0", bytes("10.0.0.1:4000"));
  launcher.set("launch/0/members", bytes("0"));
  auto stuck = std::async(std::launch::async, [&] { old_worker.wait({"rank_1"}); });
  std::this_thread::sleep_for(50ms);  // the wait reaches the server

  server.start_attempt(1);
  EXPECT_THAT([&] { stuck.get(); }, ThrowsMessage<StoreError>(HasSubstr("the job restarted: attempt 1 began")));
  EXPECT_THAT([&] { TcpStore late(rank0); },
              ThrowsMessage<StoreError>(HasSubstr("this store serves attempt 1 of job \"job\", but the client belongs "
                                                  "to attempt 0: it is left over from before a restart")));
  rank0.job_id = "job/attempt-1";
  TcpStore new_worker(rank0, {.timeout = 2s});
  EXPECT_FALSE(new_worker.check({"rank_0"}));  // attempt 0's address is not attempt 1's
  EXPECT_TRUE(launcher.check({"launch/0/members"}));  // the launchers' keys outlive attempts
  EXPECT_FALSE(new_worker.check({"launch/0/members"}));
  rank0.job_id = "job/attempt-2";
  EXPECT_THAT([&] { TcpStore early(rank0); },
              ThrowsMessage<StoreError>(HasSubstr("belongs to attempt 2: that has not begun")));
  rank0.job_id = "other";
  EXPECT_THAT([&] { TcpStore other(rank0); },
              ThrowsMessage<StoreError>(HasSubstr("this store serves job \"job\", but the client belongs to job \"other\"")));
}

}  // namespace
}  // namespace chorus::cluster
