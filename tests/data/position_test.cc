// Iterator positions: after restore(position()), an iterator of an equal pipeline (even a
// newly built one, as after a restart) yields exactly the elements that would have come
// next — through every transform, mid-shuffle-buffer, mid-batch, inside repeat, after a
// filter, with caches in either state, through prefetch and parallel map.
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest-spi.h>

#include "tests/data/dataset_test_util.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::data {
namespace {

using namespace testing::test_names;
using testing::expect_restores_exactly;

const std::vector<int64_t> kStops = {0, 1, 2, 5, 13, 50, 99, 100, 101, 250, 1000};

Tree add_one(const Tree& e) { return Tree(from_values<int64_t>({e.tensor().item<int64_t>() + 1}, Shape{})); }
bool not_multiple_of_3(const Tree& e) { return e.tensor().item<int64_t>() % 3 != 0; }

Dataset generated(int64_t n) {
  return Dataset::from_generator([n](int64_t epoch) -> Dataset::Generator {
    return [n, epoch, i = int64_t{0}]() mutable -> std::optional<Tree> {
      if (i >= n) return std::nullopt;
      const int64_t v = i++;
      return Tree::list({from_values<int64_t>({v + 1000 * epoch}, Shape{}), full({v % 5 + 1}, static_cast<double>(v))});
    };
  });
}

TEST(DatasetPositionTest, TheRestoreCheckFailsOnAPassThatYieldsNothing) {
  // Every stop past the end is skipped, so without its own check it would pass vacuously.
  EXPECT_FATAL_FAILURE(expect_restores_exactly([] { return Dataset::range(0); }, kStops),
                       "pass 0 yields nothing: there is no position to restore");
}

TEST(DatasetPositionTest, SourcesAndCountingTransforms) {
  expect_restores_exactly([] { return Dataset::range(100); }, kStops);
  expect_restores_exactly(
      [] { return Dataset::from_tensor_slices(Tree{{"x", chorus::testing::random_tensor({37, 2}, 1)}}); }, kStops);
  expect_restores_exactly([] { return generated(40); }, kStops, /*epoch=*/2);
  expect_restores_exactly([] { return Dataset::range(300).map(add_one).filter(not_multiple_of_3); }, kStops);
  expect_restores_exactly([] { return Dataset::range(300).skip(7).take(200).enumerate(3); }, kStops);
  expect_restores_exactly([] { return Dataset::range(301).shard(4, 3); }, kStops);
  expect_restores_exactly([] { return Dataset::zip({Dataset::range(90), generated(120)}); }, kStops);
  expect_restores_exactly([] { return Dataset::range(70).filter(not_multiple_of_3).repeat(3); }, kStops);
  expect_restores_exactly([] { return Dataset::range(70).repeat().take(260); }, kStops);
}

TEST(DatasetPositionTest, MidShuffleBuffer) {
  for (bool reshuffle : {false, true}) {
    for (int64_t buffer : {1, 10, 64, 1000}) {
      SCOPED_TRACE(fmt::format("buffer {} reshuffle {}", buffer, reshuffle));
      expect_restores_exactly([&] { return Dataset::range(300).shuffle(buffer, 11, reshuffle); }, kStops, 3);
      // Input with unknown cardinality and a filter upstream.
      expect_restores_exactly(
          [&] { return generated(200).filter([](const Tree& e) { return e[0].tensor().item<int64_t>() % 4 != 1; })
                    .shuffle(buffer, 5, reshuffle); },
          kStops, 1);
    }
  }
  // Repeated shuffles: each repeat is a different pass of the shuffle.
  expect_restores_exactly([] { return Dataset::range(60).shuffle(20, 1).repeat(4); }, kStops);
}

TEST(DatasetPositionTest, MidBatch) {
  expect_restores_exactly([] { return Dataset::range(1023).shuffle(100, 2).batch(7); }, kStops);
  expect_restores_exactly([] { return Dataset::range(100).batch(7, true).unbatch(); }, kStops);
  expect_restores_exactly([] { return generated(50).padded_batch(4); }, kStops);
  expect_restores_exactly([] { return Dataset::range(100).batch(3).shuffle(5, 9).unbatch().batch(4); }, kStops);
}

TEST(DatasetPositionTest, TheSeedTutorialPipeline) {
  auto make = [](bool train) {
    Tree columns{{"movie_id", arange(0, 1000, 1, kInt32)}, {"user_id", arange(0, 2000, 2, kInt32)}};
    Dataset shuffled = Dataset::from_tensor_slices(columns).shuffle(1000, 42, false);
    return (train ? shuffled.take(800) : shuffled.skip(800).take(200)).batch(64).cache();
  };
  for (bool train : {true, false}) {
    expect_restores_exactly([&] { return make(train); }, kStops, 0);
    expect_restores_exactly([&] { return make(train).repeat(3); }, kStops, 0);
  }
}

TEST(DatasetPositionTest, CachesInEitherState) {
  // Recording (first pass) and serving (later passes) from memory; a fresh pipeline in
  // expect_restores_exactly has an empty cache, as a restarted process would.
  expect_restores_exactly([] { return Dataset::range(50).shuffle(10, 3, true).cache(); }, kStops, 0);
  expect_restores_exactly([] { return Dataset::range(50).shuffle(10, 3, true).cache().repeat(3); }, kStops, 1);
  // A serving position from a cache filled by pass 0, restored into a new pipeline.
  auto make = [] { return Dataset::range(50).shuffle(10, 3, true).cache(); };
  Dataset ds = make();
  testing::fingerprints(ds, 0);
  auto it = ds.iterator(4);
  for (int i = 0; i < 17; ++i) it.next();
  auto resumed = make().iterator(4);
  resumed.restore(it.position());
  EXPECT_EQ(testing::fingerprints(resumed), testing::fingerprints(it));

  const auto dir = std::filesystem::path(::testing::TempDir()) / ("chorus_position_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto make_file = [&] { return Dataset::range(50).shuffle(10, 3, true).cache(dir.string()).repeat(2); };
  expect_restores_exactly(make_file, kStops, 0);  // the file exists from the first pass on
  std::filesystem::remove_all(dir);
  auto file_it = make_file().iterator(0);
  for (int i = 0; i < 60; ++i) file_it.next();  // serving from the file in the second repeat
  const auto position = file_it.position();
  std::filesystem::remove_all(dir);  // a restart that lost the file re-records it
  auto file_resumed = make_file().iterator(0);
  file_resumed.restore(position);
  EXPECT_EQ(testing::fingerprints(file_resumed), testing::fingerprints(file_it));
  std::filesystem::remove_all(dir);

  // Restoring mid-recording re-records the elements before the position.
  auto recording = make_file().iterator(0);
  for (int i = 0; i < 20; ++i) recording.next();
  const auto saved = recording.position();
  const auto expected_rest = testing::fingerprints(recording);  // finishes: writes the file
  std::filesystem::remove_all(dir);  // as if the process had died before that
  auto rerecorded = make_file().iterator(0);
  rerecorded.restore(saved);
  EXPECT_EQ(testing::fingerprints(rerecorded), expected_rest);
  EXPECT_TRUE(std::filesystem::exists(dir / "elements.chorus-cache"));
  std::filesystem::remove_all(dir);
}

// A positioned map sees (epoch, index) of each element: the same for sequential and
// parallel maps, after a filter (indices count the map's own input), and after a restore.
TEST(DatasetPositionTest, PositionedMapsSeeEpochAndIndex) {
  auto tagged = [](int parallel) {
    return Dataset::range(40)
        .filter([](const Tree& e) { return e.tensor().item<int64_t>() % 3 != 0; })
        .map(
            [](const Tree& e, const ElementPosition& at) {
              auto value = [](int64_t v) { return from_values<int64_t>(std::vector<int64_t>{v}, Shape{}); };
              return Tree::list({e, value(at.epoch), value(at.index)});
            },
            {.num_parallel_calls = parallel});
  };
  for (int parallel : {1, 3}) {
    auto it = tagged(parallel).iterator(2);
    for (int64_t i = 0; auto e = it.next(); ++i) {
      EXPECT_EQ((*e)[1].tensor().item<int64_t>(), 2);
      EXPECT_EQ((*e)[2].tensor().item<int64_t>(), i) << "parallel " << parallel;
    }
  }
  auto it = tagged(2).iterator(1);
  for (int i = 0; i < 7; ++i) it.next();
  auto resumed = tagged(1).iterator(1);
  resumed.restore(it.position());
  EXPECT_EQ((*resumed.next())[2].tensor().item<int64_t>(), 7);
  expect_restores_exactly([&] { return tagged(2); }, kStops);
}

TEST(DatasetPositionTest, ThroughPrefetchAndParallelMap) {
  expect_restores_exactly([] { return Dataset::range(300).map(add_one, {.num_parallel_calls = 3}); }, kStops);
  expect_restores_exactly(
      [] { return Dataset::range(300).shuffle(50, 1).map(add_one, {.num_parallel_calls = 2}).prefetch(3); }, kStops);
  expect_restores_exactly([] { return generated(120).prefetch(2).padded_batch(5).prefetch(1); }, kStops);
  // Positions of a parallel map restore into a sequential one and back.
  auto parallel = Dataset::range(100).map(add_one, {.num_parallel_calls = 2}).iterator();
  auto sequential = Dataset::range(100).map(add_one).iterator();
  for (int i = 0; i < 30; ++i) parallel.next(), sequential.next();
  auto a = Dataset::range(100).map(add_one).iterator();
  a.restore(parallel.position());
  auto b = Dataset::range(100).map(add_one, {.num_parallel_calls = 3}).iterator();
  b.restore(sequential.position());
  const auto expected = testing::fingerprints(Dataset::range(100).map(add_one).skip(30));
  EXPECT_EQ(testing::fingerprints(a), expected);
  EXPECT_EQ(testing::fingerprints(b), expected);
}

TEST(DatasetPositionTest, UnseededShuffleResumesWithTheSavedSeed) {
  auto it = Dataset::range(100).shuffle(100).iterator();
  for (int i = 0; i < 30; ++i) it.next();
  auto resumed = Dataset::range(100).shuffle(100).iterator();  // another drawn seed
  resumed.restore(it.position());
  EXPECT_EQ(testing::fingerprints(resumed), testing::fingerprints(it));
}

TEST(DatasetPositionTest, AnotherPipelineIsRejected) {
  auto it = Dataset::range(10).shuffle(5, 1).take(5).iterator();
  it.next();
  auto other = Dataset::range(10).shuffle(5, 1).skip(5).iterator();
  EXPECT_THAT([&] { other.restore(it.position()); },
              ThrowsMessage<ValueError>(HasSubstr("Iterator::restore: the position belongs to the pipeline 'range -> "
                                                  "shuffle -> take', not to this one 'range -> shuffle -> skip'")));
  EXPECT_THAT([&] { other.restore(IteratorPosition{nlohmann::json{{"x", 1}}}); },
              ThrowsMessage<ValueError>(HasSubstr("Iterator::restore: expected a position from Iterator::position()")));
  IteratorPosition broken = other.position();
  broken.state["state"].erase("remaining");
  EXPECT_THAT([&] { other.restore(broken); },
              ThrowsMessage<ValueError>(HasSubstr("Iterator::restore: malformed position for the pipeline")));
  IteratorPosition wrong_stage = other.position();
  wrong_stage.state["state"]["op"] = "take";
  EXPECT_THAT([&] { other.restore(wrong_stage); },
              ThrowsMessage<ValueError>(HasSubstr("expected a position of a 'skip' stage, got one of a 'take' stage")));
  EXPECT_EQ(Dataset::zip({Dataset::range(3), Dataset::range(3).map(add_one)}).batch(2).iterator().position()
                .state["pipeline"],
            "zip(range, range -> map) -> batch");
}

}  // namespace
}  // namespace chorus::data
