// The start-up check between ranks on 127.0.0.1 through the real store: equal
// signatures pass, and one differing worker makes every rank fail with the difference.
#include "chorus/cluster/startup_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "chorus/cluster/tcp_store.h"
#include "tests/testing/free_port.h"

namespace chorus::cluster {
namespace {

using chorus::testing::free_port;

// The error each of `size` ranks gets ("" when none), rank r checking signature_of(r).
std::vector<std::string> check_on_ranks(int size, std::function<std::vector<std::string>(int)> signature_of) {
  const int port = free_port();
  std::vector<std::future<std::string>> ranks;
  for (int rank = 0; rank < size; ++rank) {
    ranks.push_back(std::async(std::launch::async, [=] {
      ClusterSpec cluster =
          explicit_cluster({.rank = rank, .world_size = size, .master_addr = "127.0.0.1", .master_port = port});
      TcpStore store(cluster);
      std::string error;
      try {
        check_same_signature(store, cluster, signature_of(rank));
      } catch (const ValueError& e) {
        error = e.what();
      }
      store.set("done/" + std::to_string(rank), {});
      if (rank == 0) {  // the store's host stays until everyone has read
        for (int r = 0; r < size; ++r) store.wait({"done/" + std::to_string(r)});
      }
      return error;
    }));
  }
  std::vector<std::string> errors;
  for (auto& r : ranks) errors.push_back(r.get());
  return errors;
}

const std::vector<std::string> kModel = {"dense/kernel (784, 256) float32", "dense/bias (256,) float32",
                                         "dense_1/kernel (256, 10) float32", "global_batch_size 64",
                                         "optimizer adam"};

TEST(StartupCheckTest, EqualSignaturesPass) {
  for (const auto& e : check_on_ranks(3, [](int) { return kModel; })) EXPECT_EQ(e, "");
}

TEST(StartupCheckTest, ADifferentWorkerFailsEveryRank) {
  auto errors = check_on_ranks(3, [](int rank) {
    auto s = kModel;
    if (rank == 2) s[2] = "dense_1/kernel (256, 12) float32";
    return s;
  });
  for (const auto& e : errors) {
    EXPECT_EQ(e, "the workers disagree on the model: rank 2 has 'dense_1/kernel (256, 12) float32' where rank 0 has "
                 "'dense_1/kernel (256, 10) float32' (line 3)");
  }
  errors = check_on_ranks(2, [](int rank) { return rank == 1 ? std::vector<std::string>(kModel.begin(), kModel.end() - 1) : kModel; });
  for (const auto& e : errors) EXPECT_THAT(e, ::testing::HasSubstr("rank 1 has nothing where rank 0 has 'optimizer adam' (line 5)"));
}

}  // namespace
}  // namespace chorus::cluster
