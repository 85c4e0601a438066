// prefetch and parallel map: order preserved, exceptions in order, clean shutdown when
// an iterator is destroyed mid-epoch, and real concurrency. No timing assertions.
#include <atomic>
#include <chrono>
#include <thread>

#include "tests/data/dataset_test_util.h"
#include "tests/testing/test_names.h"

namespace chorus::data {
namespace {

using namespace testing::test_names;
using testing::scalars;

Tree scalar_of(int64_t v) { return Tree(from_values<int64_t>({v}, Shape{})); }

// Squares its input after sleeping a pseudo-random few microseconds, so parallel calls
// finish out of order.
Tree slow_square(const Tree& e) {
  const int64_t v = e.tensor().item<int64_t>();
  std::this_thread::sleep_for(std::chrono::microseconds((v * 7919) % 200));
  return scalar_of(v * v);
}

std::vector<int64_t> squares(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t v = 0; v < n; ++v) out.push_back(v * v);
  return out;
}

// Elements 0..n-1; pulling element `bad` throws ValueError("bad element <bad>").
Dataset failing_at(int64_t n, int64_t bad) {
  return Dataset::from_generator([n, bad](int64_t) -> Dataset::Generator {
    return [n, bad, i = int64_t{0}]() mutable -> std::optional<Tree> {
      if (i >= n) return std::nullopt;
      if (i == bad) {
        ++i;
        throw_error<ValueError>("bad element {}", bad);
      }
      return scalar_of(i++);
    };
  });
}

TEST(DatasetPrefetchTest, PreservesOrderAndValues) {
  for (int64_t n : {0, 1, 7, 1023}) {
    for (int64_t buffer : std::initializer_list<int64_t>{1, 3, kAutotune}) {
      Dataset ds = Dataset::range(n).map(slow_square).prefetch(buffer);
      EXPECT_EQ(ds.cardinality(), n);
      EXPECT_EQ(scalars(ds), squares(n)) << n << " " << buffer;
    }
  }
}

TEST(DatasetPrefetchTest, ErrorsArriveInOrderAndIterationCanContinue) {
  auto it = failing_at(10, 4).prefetch(3).iterator();
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(it.next()->tensor().item<int64_t>(), i);
  EXPECT_THAT([&] { it.next(); }, ThrowsMessage<ValueError>(HasSubstr("bad element 4")));
  EXPECT_EQ(it.next()->tensor().item<int64_t>(), 5);
}

TEST(DatasetPrefetchTest, DestroyingMidEpochStopsTheProducer) {
  std::atomic<int64_t> produced{0};
  {
    auto it = Dataset::range(0, 1'000'000'000)
                  .map([&](const Tree& e) {
                    ++produced;
                    return e;
                  })
                  .prefetch(4)
                  .iterator();
    for (int i = 0; i < 3; ++i) it.next();
  }  // joins the producer: it was blocked on a full queue
  const int64_t after = produced.load();
  EXPECT_LE(after, 3 + 4 + 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(produced.load(), after);
}

TEST(DatasetParallelMapTest, MatchesSequentialMapInOrder) {
  for (int64_t n : {0, 1, 7, 1023}) {
    for (int workers : {2, 3, static_cast<int>(kAutotune)}) {
      Dataset ds = Dataset::range(n).map(slow_square, {.num_parallel_calls = workers});
      EXPECT_EQ(ds.cardinality(), n);
      EXPECT_EQ(scalars(ds), squares(n)) << n << " " << workers;
    }
  }
}

TEST(DatasetParallelMapTest, RunsCallsConcurrently) {
  std::atomic<int> running{0}, most{0};
  auto fn = [&](const Tree& e) {
    const int now = ++running;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    --running;
    return e;
  };
  EXPECT_EQ(scalars(Dataset::range(40).map(fn, {.num_parallel_calls = 4})).size(), 40u);
  EXPECT_GE(most.load(), 2);
}

TEST(DatasetParallelMapTest, TheFirstErrorInOrderSurfaces) {
  // Element 3 fails slowly, element 5 fails at once: 3's error must come out first.
  auto fn = [](const Tree& e) {
    const int64_t v = e.tensor().item<int64_t>();
    if (v == 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      throw_error<ValueError>("fn failed on {}", v);
    }
    if (v == 5) throw_error<ValueError>("fn failed on {}", v);
    return e;
  };
  auto it = Dataset::range(8).map(fn, {.num_parallel_calls = 4}).iterator();
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(it.next()->tensor().item<int64_t>(), i);
  EXPECT_THAT([&] { it.next(); }, ThrowsMessage<ValueError>(HasSubstr("fn failed on 3")));
  EXPECT_EQ(it.next()->tensor().item<int64_t>(), 4);
  EXPECT_THAT([&] { it.next(); }, ThrowsMessage<ValueError>(HasSubstr("fn failed on 5")));
  EXPECT_EQ(it.next()->tensor().item<int64_t>(), 6);
}

TEST(DatasetParallelMapTest, InputErrorsSurfaceInOrder) {
  auto it = failing_at(6, 2).map(slow_square, {.num_parallel_calls = 3}).iterator();
  EXPECT_EQ(it.next()->tensor().item<int64_t>(), 0);
  EXPECT_EQ(it.next()->tensor().item<int64_t>(), 1);
  EXPECT_THAT([&] { it.next(); }, ThrowsMessage<ValueError>(HasSubstr("bad element 2")));
  EXPECT_EQ(it.next()->tensor().item<int64_t>(), 9);
}

TEST(DatasetParallelMapTest, DestroyingMidEpochJoinsTheWorkers) {
  std::atomic<int64_t> calls{0};
  {
    auto it = Dataset::range(0, 1'000'000'000)
                  .map(
                      [&](const Tree& e) {
                        ++calls;
                        std::this_thread::sleep_for(std::chrono::microseconds(100));
                        return e;
                      },
                      {.num_parallel_calls = 3})
                  .iterator();
    for (int i = 0; i < 5; ++i) it.next();
  }
  const int64_t after = calls.load();
  EXPECT_LE(after, 5 + 2 * 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(calls.load(), after);
}

TEST(DatasetParallelMapTest, ParallelMapFeedingPrefetch) {
  Dataset ds = Dataset::range(1023).map(slow_square, {.num_parallel_calls = 2}).batch(10).prefetch(2).unbatch();
  EXPECT_EQ(scalars(ds), squares(1023));
}

}  // namespace
}  // namespace chorus::data
