// UpdateTeam: replica threads lending themselves to replica 0's kernels. Every chunk
// runs exactly once, on whichever thread is free; a helper that never comes leaves them
// all to the caller; close() releases the helpers; errors reach the caller.

#include "chorus/replicas/update_team.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "chorus/optimizers/update_kernels.h"

namespace chorus::replicas {
namespace {

using backend::cpu::LentThreadsScope;
using backend::cpu::parallel_for;

TEST(UpdateTeamTest, ParallelForSplitsAcrossTheServingHelpers) {
  UpdateTeam team(3);
  std::vector<std::thread> helpers;
  for (int h = 0; h < 2; ++h) helpers.emplace_back([&] { team.serve(1); });
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::atomic<int>> runs(3000);
  std::atomic<int> helper_chunks{0};
  {
    LentThreadsScope lent(&team);
    parallel_for(3000, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) runs[static_cast<size_t>(i)].fetch_add(1);
      if (std::this_thread::get_id() != caller) {
        helper_chunks.fetch_add(1);
        return;
      }
      // The caller's chunk waits for a helper to take another, which a serving helper
      // does however the threads are scheduled.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (helper_chunks.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    });
    // A second job: the helpers serve every job until the step closes.
    parallel_for(3000, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) runs[static_cast<size_t>(i)].fetch_add(1);
    });
  }
  team.close(1);
  for (auto& helper : helpers) helper.join();
  for (const auto& r : runs) ASSERT_EQ(r.load(), 2);
  EXPECT_GE(helper_chunks.load(), 1);
}

TEST(UpdateTeamTest, WithoutHelpersTheCallerRunsEveryChunk) {
  UpdateTeam team(4);
  std::vector<int> runs(100, 0);
  {
    LentThreadsScope lent(&team);
    parallel_for(100, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) ++runs[static_cast<size_t>(i)];
    });
  }
  for (const int r : runs) EXPECT_EQ(r, 1);
  // A helper arriving after its step closed returns at once.
  team.close(7);
  team.serve(7);
  team.serve(3);
}

TEST(UpdateTeamTest, TheUpdateKernelsGiveTheSameBitsLent) {
  // Adam over 100,000 elements, chunked across 2 threads, against one thread.
  constexpr int64_t n = 100'000;
  std::vector<float> var(n), m(n, 0.f), v(n, 0.f), grad(n);
  for (int64_t i = 0; i < n; ++i) {
    var[static_cast<size_t>(i)] = 0.001f * static_cast<float>(i % 997);
    grad[static_cast<size_t>(i)] = 0.01f * static_cast<float>((i * 31) % 101) - 0.5f;
  }
  std::vector<float> var2 = var, m2 = m, v2 = v;
  auto args = [&](std::vector<float>& x, std::vector<float>& mm, std::vector<float>& vv) {
    return optimizers::kernels::AdamArgs{.var = x.data(), .m = mm.data(), .v = vv.data(), .v_hat = nullptr,
                                         .grad = grad.data(), .one_minus_beta_1 = 0.1f, .one_minus_beta_2 = 0.001f,
                                         .alpha = 0.001f, .epsilon = 1e-7f};
  };
  backend::cpu::set_intra_op_threads(1);
  optimizers::kernels::adam(args(var, m, v), n);
  UpdateTeam team(2);
  std::thread helper([&] { team.serve(1); });
  {
    LentThreadsScope lent(&team);
    optimizers::kernels::adam(args(var2, m2, v2), n);
  }
  team.close(1);
  helper.join();
  EXPECT_EQ(var, var2);
  EXPECT_EQ(m, m2);
  EXPECT_EQ(v, v2);
}

TEST(UpdateTeamTest, AChunksErrorReachesTheCallerAndNestedLoopsRunSerially) {
  UpdateTeam team(2);
  std::thread helper([&] { team.serve(1); });
  {
    LentThreadsScope lent(&team);
    std::atomic<int> nested_outside_team{0};
    parallel_for(2, 1, [&](int64_t, int64_t) {
      // Inside a chunk nothing is lent: a nested loop runs whole on this thread.
      if (backend::cpu::lent_threads() != nullptr) nested_outside_team.fetch_add(1);
    });
    EXPECT_EQ(nested_outside_team.load(), 0);
    EXPECT_THROW(parallel_for(2, 1, [&](int64_t begin, int64_t) {
                   if (begin == 1) throw std::runtime_error("chunk 1 failed");
                 }),
                 std::runtime_error);
  }
  team.close(1);
  helper.join();
}

}  // namespace
}  // namespace chorus::replicas
