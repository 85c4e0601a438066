#include "chorus/backend/cpu/parallel.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <xmmintrin.h>

#include "tests/testing/test_util.h"

namespace chorus::backend::cpu {
namespace {

// Restores the calling thread's intra-op budget after a test changes it.
class ThreadBudget {
 public:
  explicit ThreadBudget(int threads) : saved_(intra_op_threads()) { set_intra_op_threads(threads); }
  ~ThreadBudget() { set_intra_op_threads(saved_); }

 private:
  int saved_;
};

TEST(ParallelForTest, ChunksCoverTheRangeOnceInOrder) {
  ThreadBudget budget(2);
  for (int64_t n : {1, 7, 1023, 100003}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::mutex mutex;
    std::vector<std::pair<int64_t, int64_t>> chunks;
    parallel_for(n, 1000, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)]++;
      std::lock_guard lock(mutex);
      chunks.emplace_back(begin, end);
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << "n=" << n << " i=" << i;
    EXPECT_EQ(chunks.size(), n >= 2000 ? 2u : 1u) << "n=" << n;
  }
}

TEST(ParallelForTest, OneThreadBudgetRunsOneChunkOnTheCaller) {
  ThreadBudget budget(1);
  EXPECT_EQ(intra_op_threads(), 1);
  const auto caller = std::this_thread::get_id();
  int chunks = 0;
  parallel_for(1 << 20, 1, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 1 << 20);
    ++chunks;
  });
  EXPECT_EQ(chunks, 1);
}

// Denormals are flushed on the loading thread, on threads it starts, and on every
// OpenMP worker a kernel runs on.
TEST(ParallelForTest, EveryComputeThreadFlushesDenormals) {
  EXPECT_TRUE(flush_denormal_enabled());
  bool in_new_thread = false;
  std::thread([&] { in_new_thread = flush_denormal_enabled(); }).join();
  EXPECT_TRUE(in_new_thread);

  ThreadBudget budget(2);
  std::atomic<int> flushed{0}, chunks{0};
  volatile float tiny = 1e-30f;
  std::atomic<bool> product_flushed{true};
  parallel_for(4000, 1000, [&](int64_t, int64_t) {
    chunks++;
    if (flush_denormal_enabled()) flushed++;
    if (tiny * 1e-10f != 0.0f) product_flushed = false;  // 1e-40 is a denormal
  });
  EXPECT_EQ(flushed.load(), chunks.load());
  EXPECT_TRUE(product_flushed.load());

  // A caller whose MXCSR lost FTZ/DAZ (e.g. user code reset it) still gets flushing
  // workers: every parallel region sets it on each of its threads.
  _mm_setcsr(_mm_getcsr() & ~0x8040u);
  ASSERT_FALSE(flush_denormal_enabled());
  flushed = 0;
  chunks = 0;
  parallel_for(4000, 1000, [&](int64_t, int64_t) {
    chunks++;
    if (flush_denormal_enabled()) flushed++;
  });
  EXPECT_EQ(chunks.load(), 2);
  EXPECT_EQ(flushed.load(), 2);
  enable_flush_denormal();
}

}  // namespace
}  // namespace chorus::backend::cpu
