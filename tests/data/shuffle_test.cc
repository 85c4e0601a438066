// shuffle: tf.data's buffer semantics against a reference loop, determinism with a seed,
// reshuffling across epochs, and the train/test split the seed tutorials rely on.
#include <algorithm>
#include <set>

#include "chorus/core/random.h"
#include "tests/data/dataset_test_util.h"

namespace chorus::data {
namespace {

using testing::scalars;

// The documented algorithm, written out: a buffer of `buffer` input indices; output k
// takes slot floor(u64(Philox(key, k)) * size / 2^64) and refills it with the next input,
// or with the last slot once the input has ended.
std::vector<int64_t> reference_shuffle(int64_t n, int64_t buffer, uint64_t key) {
  std::vector<int64_t> slots, out;
  int64_t next = 0;
  while (static_cast<int64_t>(slots.size()) < buffer && next < n) slots.push_back(next++);
  for (uint64_t k = 0; !slots.empty(); ++k) {
    const auto block = philox4x32(key, k);
    const uint64_t bits = (uint64_t{block[0]} << 32) | block[1];
    __extension__ using Wide = unsigned __int128;
    const auto j = static_cast<size_t>((static_cast<Wide>(bits) * slots.size()) >> 64);
    out.push_back(slots[j]);
    if (next < n) {
      slots[j] = next++;
    } else {
      slots[j] = slots.back();
      slots.pop_back();
    }
  }
  return out;
}

uint64_t pass_key(uint64_t seed, int64_t epoch, bool reshuffle) {
  return reshuffle && epoch != 0 ? Generator(seed).fork(static_cast<uint64_t>(epoch)).key() : seed;
}

TEST(DatasetShuffleTest, MatchesTheReferenceAlgorithm) {
  for (int64_t n : {0, 1, 7, 1023}) {
    for (int64_t buffer : {1, 2, 10, 1023, 5000}) {
      for (bool reshuffle : {false, true}) {
        Dataset ds = Dataset::range(n).shuffle(buffer, 42, reshuffle);
        for (int64_t epoch : {0, 1, 2}) {
          EXPECT_EQ(scalars(ds, epoch), reference_shuffle(n, buffer, pass_key(42, epoch, reshuffle)))
              << "n=" << n << " buffer=" << buffer << " epoch=" << epoch << " reshuffle=" << reshuffle;
        }
      }
    }
  }
}

// Skipping from the start of a pass over an input of known size replays the draws on
// indices and reads only the buffered elements; it must agree with the reference.
TEST(DatasetShuffleTest, SkipAfterShuffleMatchesTheReference) {
  const int64_t n = 1023;
  for (int64_t buffer : {1, 10, 2000}) {
    const auto order = reference_shuffle(n, buffer, 42);
    for (int64_t k : {0, 1, 5, 500, 1022, 1023, 2000}) {
      const std::vector<int64_t> rest(order.begin() + std::min(k, n), order.end());
      EXPECT_EQ(scalars(Dataset::range(n).shuffle(buffer, 42).skip(k)), rest) << buffer << " " << k;
      // The same through a map (skipped elements never reach fn) and with an unknown size.
      int64_t calls = 0;
      Dataset mapped = Dataset::range(n).map([&calls](const Tree& e) {
        ++calls;
        return e;
      });
      EXPECT_EQ(scalars(mapped.shuffle(buffer, 42).skip(k)), rest) << buffer << " " << k;
      EXPECT_EQ(calls, std::max<int64_t>(0, n - k));  // only the elements that are output
      Dataset unknown = Dataset::range(n).filter([](const Tree&) { return true; });
      EXPECT_EQ(scalars(unknown.shuffle(buffer, 42).skip(k)), rest) << buffer << " " << k;
    }
  }
}

TEST(DatasetShuffleTest, IsAPermutationWithinTheBufferWindow) {
  const int64_t n = 1023, buffer = 10;
  const auto order = scalars(Dataset::range(n).shuffle(buffer, 3));
  auto sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i);
  // Output k can only be an input the buffer has seen: index < k + buffer.
  for (int64_t k = 0; k < n; ++k) EXPECT_LT(order[k], k + buffer);
  EXPECT_NE(order, sorted);
  // A buffer of one changes nothing.
  EXPECT_EQ(scalars(Dataset::range(n).shuffle(1, 3)), sorted);
}

TEST(DatasetShuffleTest, SeededOrderIsReproducibleAndReshufflesPerEpoch) {
  const int64_t n = 1000;
  Dataset fixed = Dataset::range(n).shuffle(n, 7, /*reshuffle_each_iteration=*/false);
  Dataset reshuffled = Dataset::range(n).shuffle(n, 7, /*reshuffle_each_iteration=*/true);
  // Same seed, same order; pass 0 is the same with and without reshuffling.
  EXPECT_EQ(scalars(fixed, 0), scalars(Dataset::range(n).shuffle(n, 7, false), 0));
  EXPECT_EQ(scalars(fixed, 0), scalars(reshuffled, 0));
  EXPECT_EQ(scalars(fixed, 0), scalars(fixed, 5));
  // Reshuffling: passes differ, and each pass is reproducible.
  EXPECT_NE(scalars(reshuffled, 0), scalars(reshuffled, 1));
  EXPECT_NE(scalars(reshuffled, 1), scalars(reshuffled, 2));
  EXPECT_EQ(scalars(reshuffled, 2), scalars(Dataset::range(n).shuffle(n, 7, true), 2));
  // Another seed, another order.
  EXPECT_NE(scalars(fixed, 0), scalars(Dataset::range(n).shuffle(n, 8, false), 0));
}

TEST(DatasetShuffleTest, UnseededShuffleDrawsASeedPerDataset) {
  const int64_t n = 1000;
  Dataset a = Dataset::range(n).shuffle(n, std::nullopt, false);
  Dataset b = Dataset::range(n).shuffle(n, std::nullopt, false);
  EXPECT_NE(scalars(a), scalars(b));
  EXPECT_EQ(scalars(a, 0), scalars(a, 1));  // the drawn seed is the dataset's, fixed
}

// The retrieval tutorial: shuffle(100000, seed=42, reshuffle_each_iteration=False), then
// take(80000) for training and skip(80000) for testing.
TEST(DatasetShuffleTest, TakeAndSkipSplitsAreDisjointCoveringAndStable) {
  const int64_t n = 100'000, split = 80'000;
  Dataset shuffled = Dataset::range(n).shuffle(n, 42, false);
  Dataset train = shuffled.take(split);
  Dataset test = shuffled.skip(split);
  EXPECT_EQ(train.cardinality(), split);
  EXPECT_EQ(test.cardinality(), n - split);
  const auto train0 = scalars(train, 0), test0 = scalars(test, 0);
  ASSERT_EQ(static_cast<int64_t>(train0.size()), split);
  ASSERT_EQ(static_cast<int64_t>(test0.size()), n - split);
  std::set<int64_t> seen(train0.begin(), train0.end());
  for (int64_t v : test0) EXPECT_FALSE(seen.count(v)) << v << " is in both splits";
  seen.insert(test0.begin(), test0.end());
  EXPECT_EQ(static_cast<int64_t>(seen.size()), n);
  EXPECT_EQ(scalars(train, 1), train0);
  EXPECT_EQ(scalars(test, 3), test0);
}

TEST(DatasetShuffleTest, ShufflesWholeElementsTogether) {
  const int64_t n = 257;
  Tensor ids = arange(0, static_cast<double>(n), 1, kInt64);
  Tensor twice = arange(0, static_cast<double>(2 * n), 2, kFloat32);
  auto it = Dataset::from_tensor_slices(Tree{{"id", ids}, {"twice", twice}}).shuffle(50, 1).iterator();
  int64_t count = 0;
  while (auto e = it.next()) {
    EXPECT_EQ((*e)["twice"].tensor().item<float>(), 2.0f * static_cast<float>((*e)["id"].tensor().item<int64_t>()));
    ++count;
  }
  EXPECT_EQ(count, n);
}

// Small fixed-layout elements are buffered packed, others as trees; an element that
// breaks the layout mid-pass switches the buffer over. The order is the same either way.
TEST(DatasetShuffleTest, AnyElementLayoutShufflesTheSame) {
  const int64_t n = 300;
  auto element = [](int64_t i) {
    // Elements 0-99: one int64; then a float vector of varying length (100-199), then
    // large vectors (200-299) that are kept as trees.
    Tree id = from_values<int64_t>({i}, Shape{});
    if (i < 100) return Tree::list({id});
    const int64_t length = i < 200 ? i % 7 + 1 : 100;
    return Tree::list({id, full({length}, static_cast<double>(i))});
  };
  Dataset ds = Dataset::from_generator([&](int64_t) -> Dataset::Generator {
    return [element, i = int64_t{0}]() mutable -> std::optional<Tree> {
      if (i == 300) return std::nullopt;
      return element(i++);
    };
  });
  for (int64_t buffer : {1, 50, 150, 1000}) {
    const auto order = reference_shuffle(n, buffer, 9);
    auto it = ds.shuffle(buffer, 9).iterator();
    for (int64_t k = 0; k < n; ++k) {
      auto e = it.next();
      ASSERT_TRUE(e);
      ASSERT_EQ(testing::fingerprint(*e), testing::fingerprint(element(order[k]))) << "buffer " << buffer << " k " << k;
    }
    EXPECT_FALSE(it.next());
  }
}

// A shuffle whose buffer holds all of an in-memory array's rows fills from the stacked
// rows and batches by drawing straight into stacked rows: the same batches, bit for bit,
// as a pipeline that hands the shuffle one element at a time (a map in between), for
// take and skip splits and batches that do not divide the data; and a position saved
// mid-pass resumes exactly.
TEST(DatasetShuffleTest, WholeArrayShufflesBatchAsElementByElement) {
  const int64_t n = 1003;
  Generator gen(5);
  std::vector<int32_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = static_cast<int32_t>(i * 7 % 5);
  const Tree columns{{"label", from_values<int32_t>(labels, Shape{n})},
                     {"x", uniform(Shape{n, 3}, gen, -1, 1)},
                     {"id", arange(static_cast<double>(n), kInt64)}};
  auto pipeline = [&](bool one_at_a_time, int part, int64_t buffer) {
    Dataset slices = Dataset::from_tensor_slices(columns);
    if (one_at_a_time) slices = slices.map([](const Tree& e) { return e; });
    const Dataset shuffled = slices.shuffle(buffer, 42, /*reshuffle_each_iteration=*/false);
    return part == 0 ? shuffled.take(800).batch(64) : shuffled.skip(800).take(300).batch(64);
  };
  for (int64_t buffer : {n, int64_t{5000}}) {
    for (int part : {0, 1}) {
      const std::vector<std::string> stacked = testing::fingerprints(pipeline(false, part, buffer));
      EXPECT_EQ(stacked, testing::fingerprints(pipeline(true, part, buffer))) << buffer << " " << part;
      EXPECT_EQ(stacked.size(), part == 0 ? 13u : 4u);  // 800 = 12 x 64 + 32; 203 = 3 x 64 + 11
      testing::expect_restores_exactly([&] { return pipeline(false, part, buffer); }, {0, 1, 3});
    }
  }
}

TEST(DatasetShuffleTest, LargeElementsStayViewsOfTheirSource) {
  Tensor images = zeros({10, 100});
  auto it = Dataset::from_tensor_slices(Tree(images)).shuffle(10, 1).iterator();
  while (auto e = it.next()) EXPECT_TRUE(e->tensor().shares_storage(images));
}

}  // namespace
}  // namespace chorus::data
