// Sources (from_tensor_slices, range, from_generator, zip) and the counting transforms
// (map, filter, take, skip, repeat, shard, enumerate): values against plain loops,
// cardinality by tf.data's rules, and argument errors.
#include "chorus/data/dataset.h"

#include <atomic>
#include <numeric>

#include "chorus/backend/cpu/parallel.h"
#include "tests/data/dataset_test_util.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::data {
namespace {

using namespace testing::test_names;
using testing::scalars;

std::vector<int64_t> iota(int64_t begin, int64_t end) {
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(0, end - begin)));
  std::iota(out.begin(), out.end(), begin);
  return out;
}

// A dataset of n int64 scalars 0..n-1 from a generator that counts its pulls and records
// the epochs it was started for.
struct Counted {
  std::shared_ptr<int64_t> pulls = std::make_shared<int64_t>(0);
  std::shared_ptr<std::vector<int64_t>> epochs = std::make_shared<std::vector<int64_t>>();
  Dataset make(int64_t n, int64_t cardinality = kUnknownCardinality) const {
    return Dataset::from_generator(
        [n, pulls = pulls, epochs = epochs](int64_t epoch) -> Dataset::Generator {
          epochs->push_back(epoch);
          return [n, pulls, i = int64_t{0}]() mutable -> std::optional<Tree> {
            if (i >= n) return std::nullopt;
            ++*pulls;
            return Tree(int64_scalar(i++));
          };
        },
        cardinality);
  }
  static Tensor int64_scalar(int64_t v) { return from_values<int64_t>({v}, Shape{}); }
};

TEST(DatasetSourcesTest, FromTensorSlicesYieldsRowViews) {
  for (int64_t n : {1, 7, 1023}) {
    Tensor x = random_tensor({n, 3}, 1);
    Tensor y = random_tensor({n}, 2);
    Dataset ds = Dataset::from_tensor_slices(Tree{{"x", x}, {"y", Tree::list({y})}});
    EXPECT_EQ(ds.cardinality(), n);
    auto it = ds.iterator();
    const auto xv = x.to_vector<float>(), yv = y.to_vector<float>();
    int64_t i = 0;
    while (auto e = it.next()) {
      const Tensor& ex = (*e)["x"].tensor();
      EXPECT_EQ(ex.shape(), Shape({3}));
      EXPECT_TRUE(ex.shares_storage(x));  // a view, not a copy
      for (int j = 0; j < 3; ++j) EXPECT_EQ(ex.to_vector<float>()[j], xv[i * 3 + j]);
      EXPECT_EQ((*e)["y"][0].tensor().shape(), Shape{});
      EXPECT_EQ((*e)["y"][0].tensor().item<float>(), yv[i]);
      ++i;
    }
    EXPECT_EQ(i, n);
  }
}

TEST(DatasetSourcesTest, FromTensorSlicesOfAViewSlicesTheView) {
  Tensor base = random_tensor({10, 2}, 3);
  Tensor view = base.first_axis_slice(3, 8);
  Dataset ds = Dataset::from_tensor_slices(Tree(view));
  const auto bv = base.to_vector<float>();
  auto it = ds.iterator();
  for (int64_t i = 0; i < 5; ++i) {
    auto e = it.next();
    ASSERT_TRUE(e);
    EXPECT_THAT(e->tensor().to_vector<float>(), ElementsAre(bv[(3 + i) * 2], bv[(3 + i) * 2 + 1]));
  }
  EXPECT_FALSE(it.next());
}

TEST(DatasetSourcesTest, FromTensorSlicesRejectsBadTrees) {
  Tree uneven{{"x", zeros({4, 2})}, {"y", zeros({3})}};
  EXPECT_THAT([&] { Dataset::from_tensor_slices(uneven); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "from_tensor_slices: expected every tensor to have the same first dimension. Received: shape "
                  "(4, 2) at [\"x\"] and shape (3,) at [\"y\"]")));
  Tree with_scalar = Tree::list({zeros({4}), scalar(1)});
  EXPECT_THAT([&] { Dataset::from_tensor_slices(with_scalar); },
              ThrowsMessage<ValueError>(HasSubstr("Received: a scalar at [1]")));
  EXPECT_THAT([&] { Dataset::from_tensor_slices(Tree(Tree::List{})); },
              ThrowsMessage<ValueError>(HasSubstr("from_tensor_slices: expected a tree with at least one tensor")));
}

TEST(DatasetSourcesTest, RangeMatchesALoop) {
  for (auto [start, stop, step] : std::vector<std::array<int64_t, 3>>{
           {0, 10, 1}, {0, 10, 3}, {10, 0, -3}, {5, 5, 1}, {5, 0, 1}, {-3, 4, 2}, {0, 1023, 1}}) {
    std::vector<int64_t> expected;
    for (int64_t v = start; step > 0 ? v < stop : v > stop; v += step) expected.push_back(v);
    Dataset ds = Dataset::range(start, stop, step);
    EXPECT_EQ(scalars(ds), expected) << start << " " << stop << " " << step;
    EXPECT_EQ(ds.cardinality(), static_cast<int64_t>(expected.size()));
  }
  EXPECT_THAT([] { Dataset::range(0, 5, 0); },
              ThrowsMessage<ValueError>(HasSubstr("range: expected step != 0. Received: step=0")));
}

TEST(DatasetSourcesTest, GeneratorIsMadeAgainForEachPass) {
  Dataset ds = Dataset::from_generator([](int64_t epoch) -> Dataset::Generator {
    return [epoch, i = int64_t{0}]() mutable -> std::optional<Tree> {
      if (i == 3) return std::nullopt;
      return Tree(from_values<int64_t>({epoch * 10 + i++}, Shape{}));
    };
  });
  EXPECT_EQ(ds.cardinality(), kUnknownCardinality);
  EXPECT_EQ(scalars(ds, 0), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(scalars(ds, 2), (std::vector<int64_t>{20, 21, 22}));
  EXPECT_EQ(Counted().make(5, 5).cardinality(), 5);
  EXPECT_THAT([] { Dataset::from_generator(nullptr); },
              ThrowsMessage<ValueError>(HasSubstr("from_generator: expected a function")));
}

TEST(DatasetSourcesTest, ZipPairsElementsAndEndsWithTheShortest) {
  Dataset ds = Dataset::zip({Dataset::range(5), Dataset::range(10, 13)});
  EXPECT_EQ(ds.cardinality(), 3);
  auto it = ds.iterator();
  for (int64_t i = 0; i < 3; ++i) {
    auto e = it.next();
    ASSERT_TRUE(e);
    EXPECT_EQ((*e)[0].tensor().item<int64_t>(), i);
    EXPECT_EQ((*e)[1].tensor().item<int64_t>(), 10 + i);
  }
  EXPECT_FALSE(it.next());
  EXPECT_FALSE(it.next());
  EXPECT_EQ(Dataset::zip({Dataset::range(5), Dataset::range(3).repeat()}).cardinality(), 5);
  EXPECT_EQ(Dataset::zip({Dataset::range(5), Counted().make(3)}).cardinality(), kUnknownCardinality);
  EXPECT_THAT([] { Dataset::zip({}); }, ThrowsMessage<ValueError>(HasSubstr("zip: expected at least one dataset")));
}

// A map's ops run on one thread (tf.data's default max_intra_op_parallelism), whatever
// the iterating thread's budget, which is restored afterwards.
TEST(DatasetTransformsTest, MapFunctionsRunWithOneIntraOpThread) {
  const backend::cpu::IntraOpThreadsScope four(4);  // this test's budget; the next test gets its own back
  const Dataset ds = Dataset::range(6);
  for (int calls : {1, 3}) {
    std::atomic<int> widest{0};
    const Dataset mapped = ds.map(
        [&](const Tree& e) {
          widest = std::max(widest.load(), backend::cpu::intra_op_threads());
          return e;
        },
        {.num_parallel_calls = calls});
    for (auto it = mapped.iterator(); it.next();) {
    }
    EXPECT_EQ(widest.load(), 1) << "num_parallel_calls=" << calls;
  }
  EXPECT_EQ(backend::cpu::intra_op_threads(), 4);
}

TEST(DatasetTransformsTest, MapFilterTakeSkipMatchLoops) {
  const int64_t n = 1023;
  Dataset squares = Dataset::range(n).map([](const Tree& e) {
    const int64_t v = e.tensor().item<int64_t>();
    return Tree(from_values<int64_t>({v * v}, Shape{}));
  });
  std::vector<int64_t> expected;
  for (int64_t v = 0; v < n; ++v) expected.push_back(v * v);
  EXPECT_EQ(scalars(squares), expected);
  EXPECT_EQ(squares.cardinality(), n);

  Dataset odd = Dataset::range(n).filter([](const Tree& e) { return e.tensor().item<int64_t>() % 2 == 1; });
  std::vector<int64_t> odds;
  for (int64_t v = 1; v < n; v += 2) odds.push_back(v);
  EXPECT_EQ(scalars(odd), odds);
  EXPECT_EQ(odd.cardinality(), kUnknownCardinality);

  EXPECT_EQ(scalars(Dataset::range(n).take(7)), iota(0, 7));
  EXPECT_EQ(scalars(Dataset::range(n).skip(1016)), iota(1016, n));
  EXPECT_EQ(scalars(Dataset::range(7).take(-1)), iota(0, 7));
  EXPECT_EQ(scalars(Dataset::range(7).skip(-1)), iota(0, 0));
  EXPECT_EQ(scalars(Dataset::range(7).take(100)), iota(0, 7));
  EXPECT_EQ(scalars(Dataset::range(7).skip(100)), iota(0, 0));
  EXPECT_EQ(scalars(odd.skip(2).take(3)), (std::vector<int64_t>{5, 7, 9}));
}

TEST(DatasetTransformsTest, TakeStopsPullingItsInput) {
  Counted counted;
  EXPECT_EQ(scalars(counted.make(100).take(5)), iota(0, 5));
  EXPECT_EQ(*counted.pulls, 5);
}

TEST(DatasetTransformsTest, RepeatStartsANewInputPassEachTime) {
  Counted counted;
  Dataset ds = counted.make(3).repeat(2);
  EXPECT_EQ(scalars(ds, 0), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(scalars(ds, 1), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_THAT(*counted.epochs, ElementsAre(0, 1, 2, 3));  // pass e reads input passes 2e, 2e + 1
  EXPECT_EQ(scalars(Dataset::range(3).repeat().take(7)), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(scalars(Dataset::range(3).repeat(0)), iota(0, 0));
  EXPECT_EQ(scalars(Dataset::range(0).repeat()), iota(0, 0));  // an empty input ends, never spins
}

TEST(DatasetTransformsTest, ShardsAreDisjointAndCoverTheInput) {
  for (int64_t n : {1, 7, 1023}) {
    for (int64_t k : {1, 3, 8}) {
      std::vector<int64_t> all;
      for (int64_t index = 0; index < k; ++index) {
        Dataset shard = Dataset::range(n).shard(k, index);
        const auto values = scalars(shard);
        std::vector<int64_t> expected;
        for (int64_t v = index; v < n; v += k) expected.push_back(v);
        EXPECT_EQ(values, expected) << n << " " << k << " " << index;
        EXPECT_EQ(shard.cardinality(), static_cast<int64_t>(expected.size()));
        all.insert(all.end(), values.begin(), values.end());
      }
      std::sort(all.begin(), all.end());
      EXPECT_EQ(all, iota(0, n));
    }
  }
}

TEST(DatasetTransformsTest, EnumeratePrependsACounter) {
  auto it = Dataset::range(10, 13).enumerate(5).iterator();
  for (int64_t i = 0; i < 3; ++i) {
    auto e = it.next();
    ASSERT_TRUE(e);
    EXPECT_EQ((*e)[0].tensor().dtype(), kInt64);
    EXPECT_EQ((*e)[0].tensor().item<int64_t>(), 5 + i);
    EXPECT_EQ((*e)[1].tensor().item<int64_t>(), 10 + i);
  }
  EXPECT_FALSE(it.next());
}

TEST(DatasetTransformsTest, CardinalityFollowsTfData) {
  Dataset ten = Dataset::range(10);
  Dataset unknown = ten.filter([](const Tree&) { return true; });
  Dataset forever = ten.repeat();
  EXPECT_EQ(ten.map([](const Tree& e) { return e; }).cardinality(), 10);
  EXPECT_EQ(ten.batch(3).cardinality(), 4);
  EXPECT_EQ(ten.batch(3, /*drop_remainder=*/true).cardinality(), 3);
  EXPECT_EQ(ten.take(4).cardinality(), 4);
  EXPECT_EQ(ten.take(40).cardinality(), 10);
  EXPECT_EQ(ten.skip(4).cardinality(), 6);
  EXPECT_EQ(ten.skip(40).cardinality(), 0);
  EXPECT_EQ(ten.repeat(3).cardinality(), 30);
  EXPECT_EQ(forever.cardinality(), kInfiniteCardinality);
  EXPECT_EQ(forever.take(5).cardinality(), 5);
  EXPECT_EQ(forever.skip(5).cardinality(), kInfiniteCardinality);
  EXPECT_EQ(forever.batch(4).cardinality(), kInfiniteCardinality);
  EXPECT_EQ(unknown.cardinality(), kUnknownCardinality);
  EXPECT_EQ(unknown.take(3).cardinality(), kUnknownCardinality);
  EXPECT_EQ(unknown.batch(3).cardinality(), kUnknownCardinality);
  EXPECT_EQ(unknown.repeat(2).cardinality(), kUnknownCardinality);
  EXPECT_EQ(unknown.repeat().cardinality(), kInfiniteCardinality);
  EXPECT_EQ(ten.shard(3, 0).cardinality(), 4);
  EXPECT_EQ(ten.shard(3, 2).cardinality(), 3);
  EXPECT_EQ(ten.shuffle(4, 1).cache().prefetch(2).enumerate().cardinality(), 10);
  EXPECT_EQ(ten.batch(4).unbatch().cardinality(), kUnknownCardinality);
}

TEST(DatasetTransformsTest, BadArgumentsAreValueErrors) {
  Dataset ds = Dataset::range(10);
  EXPECT_THAT([&] { ds.batch(0); },
              ThrowsMessage<ValueError>(HasSubstr("batch: expected batch_size > 0. Received: batch_size=0")));
  EXPECT_THAT([&] { ds.padded_batch(-2); },
              ThrowsMessage<ValueError>(HasSubstr("padded_batch: expected batch_size > 0. Received: batch_size=-2")));
  EXPECT_THAT([&] { ds.shuffle(0); },
              ThrowsMessage<ValueError>(HasSubstr("shuffle: expected buffer_size > 0. Received: buffer_size=0")));
  EXPECT_THAT([&] { ds.shuffle(-5, 1); },
              ThrowsMessage<ValueError>(HasSubstr("shuffle: expected buffer_size > 0. Received: buffer_size=-5")));
  EXPECT_THAT([&] { ds.prefetch(0); },
              ThrowsMessage<ValueError>(HasSubstr("prefetch: expected buffer_size > 0 or kAutotune (-1). Received: "
                                                  "buffer_size=0")));
  EXPECT_THAT([&] { ds.shard(3, 3); },
              ThrowsMessage<ValueError>(HasSubstr("shard: expected 0 <= index < num_shards. Received: index=3, "
                                                  "num_shards=3")));
  EXPECT_THAT([&] { ds.shard(0, 0); },
              ThrowsMessage<ValueError>(HasSubstr("shard: expected num_shards > 0. Received: num_shards=0")));
  EXPECT_THAT([&] { ds.take(-2); },
              ThrowsMessage<ValueError>(HasSubstr("take: expected count >= -1 (-1: all). Received: count=-2")));
  EXPECT_THAT([&] { ds.skip(-3); },
              ThrowsMessage<ValueError>(HasSubstr("skip: expected count >= -1 (-1: all). Received: count=-3")));
  EXPECT_THAT([&] { ds.repeat(-2); },
              ThrowsMessage<ValueError>(HasSubstr("repeat: expected count >= -1 (-1: forever). Received: count=-2")));
  EXPECT_THAT([&] { ds.map([](const Tree& e) { return e; }, {.num_parallel_calls = 0}); },
              ThrowsMessage<ValueError>(HasSubstr("map: expected num_parallel_calls > 0 or kAutotune (-1). "
                                                  "Received: num_parallel_calls=0")));
  EXPECT_THAT([&] { ds.map(std::function<Tree(const Tree&)>()); },
              ThrowsMessage<ValueError>(HasSubstr("map: expected a function")));
  EXPECT_THAT([&] { ds.map(std::function<Tree(const Tree&, const ElementPosition&)>()); },
              ThrowsMessage<ValueError>(HasSubstr("map: expected a function")));
  EXPECT_THAT([&] { ds.filter(nullptr); }, ThrowsMessage<ValueError>(HasSubstr("filter: expected a predicate")));
}

TEST(DatasetTransformsTest, IteratorsOutliveTheirDatasetHandles) {
  Iterator it = Dataset::range(5).map([](const Tree& e) { return e; }).shuffle(3, 7).batch(2).iterator();
  int64_t total = 0;
  while (auto e = it.next()) total += e->tensor().numel();
  EXPECT_EQ(total, 5);
}

}  // namespace
}  // namespace chorus::data
