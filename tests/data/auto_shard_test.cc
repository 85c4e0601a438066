// FILE auto-sharding: each worker reads its files (k % W == index) and batches its share
// of the global batch; caches get per-worker paths; pipelines it cannot shard are refused
// with a reason; the input pipeline is unchanged; positions of sharded pipelines restore.
#include "chorus/data/auto_shard.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "chorus/data/text_line_dataset.h"
#include "tests/data/dataset_test_util.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"

namespace chorus::data {
namespace {

namespace fs = std::filesystem;
using namespace testing::test_names;

// Line j of file k reads "k0j" (k * 100 + j), so every element names its file and line.
constexpr int kLines[] = {5, 4, 6, 3};

// A line's text as an int64 scalar element.
Tree parse_line(const Tree& line) {
  return Tree(from_values<int64_t>({std::stoll(line.tensor().string_at(0))}, Shape{}));
}

std::vector<int64_t> lines_of(std::initializer_list<int> files) {
  std::vector<int64_t> out;
  for (int k : files) {
    for (int j = 0; j < kLines[k]; ++j) out.push_back(k * 100 + j);
  }
  return out;
}

// The values of each batch of a pass.
std::vector<std::vector<int64_t>> batches(const Dataset& ds, int64_t epoch = 0) {
  std::vector<std::vector<int64_t>> out;
  for (auto it = ds.iterator(epoch); auto batch = it.next();) out.push_back(batch->tensor().to_vector<int64_t>());
  return out;
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> out;
  for (const auto& batch : batches) out.insert(out.end(), batch.begin(), batch.end());
  return out;
}

std::vector<int64_t> sizes(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> out;
  for (const auto& batch : batches) out.push_back(static_cast<int64_t>(batch.size()));
  return out;
}

std::vector<int64_t> sorted(std::vector<int64_t> values) {
  std::sort(values.begin(), values.end());
  return values;
}

// The pipeline's description, as its positions carry it.
std::string pipeline(const Dataset& ds) { return ds.iterator().position().state["pipeline"].get<std::string>(); }

// Worker `index` of `workers`; fails the test if FILE sharding does not apply.
Dataset worker(const Dataset& ds, int64_t workers, int64_t index) {
  std::string why;
  std::optional<Dataset> mine = shard_by_file(ds, workers, index, &why);
  EXPECT_TRUE(mine.has_value()) << why;
  return mine ? *mine : ds;
}

class AutoShardTest : public chorus::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    for (int k = 0; k < 4; ++k) files_.push_back(write_lines(k, 0));
  }
  // Writes file k's lines, each plus `offset`; returns its path.
  std::string write_lines(int k, int offset) const {
    std::string text;
    for (int j = 0; j < kLines[k]; ++j) text += std::to_string(k * 100 + j + offset) + "\n";
    return write("part-" + std::to_string(k) + ".txt", text);
  }
  Dataset numbers() const { return text_line_dataset(files_).map(parse_line); }
  // Why FILE sharding does not apply to `ds` among `workers`.
  static std::string refusal(const Dataset& ds, int64_t workers = 2) {
    std::string why;
    EXPECT_FALSE(shard_by_file(ds, workers, 0, &why).has_value());
    return why;
  }

  std::vector<std::string> files_;
};

TEST_F(AutoShardTest, EachWorkerReadsItsFilesAndItsShareOfTheGlobalBatch) {
  const Dataset global = numbers().batch(6);
  const auto w0 = batches(worker(global, 2, 0));
  const auto w1 = batches(worker(global, 2, 1));
  EXPECT_EQ(flat(w0), lines_of({0, 2}));  // 11 lines
  EXPECT_EQ(flat(w1), lines_of({1, 3}));  // 7 lines
  EXPECT_EQ(sizes(w0), (std::vector<int64_t>{3, 3, 3, 2}));
  EXPECT_EQ(sizes(w1), (std::vector<int64_t>{3, 3, 1}));
  std::vector<int64_t> both = flat(w0);
  const auto rest = flat(w1);
  both.insert(both.end(), rest.begin(), rest.end());
  EXPECT_EQ(sorted(both), sorted(flat(batches(global))));

  // An odd global batch: the first worker takes the extra row, as element sharding does.
  const Dataset odd = numbers().batch(7);
  EXPECT_EQ(sizes(batches(worker(odd, 2, 0))), (std::vector<int64_t>{4, 4, 3}));
  EXPECT_EQ(sizes(batches(worker(odd, 2, 1))), (std::vector<int64_t>{3, 3, 1}));
  // Three workers over four files: worker 0 gets files 0 and 3; 7 rows are 3 + 2 + 2.
  EXPECT_EQ(flat(batches(worker(odd, 3, 0))), lines_of({0, 3}));
  EXPECT_EQ(sizes(batches(worker(odd, 3, 0))), (std::vector<int64_t>{3, 3, 2}));
  EXPECT_EQ(flat(batches(worker(odd, 3, 2))), lines_of({2}));
  EXPECT_EQ(sizes(batches(worker(odd, 3, 2))), (std::vector<int64_t>{2, 2, 2}));
  // drop_remainder is each worker's own.
  EXPECT_EQ(sizes(batches(worker(numbers().batch(6, /*drop_remainder=*/true), 2, 1))), (std::vector<int64_t>{3, 3}));
}

TEST_F(AutoShardTest, StagesAfterTheBatchKeepTheirArguments) {
  // take(2) after the batch: two local batches per worker.
  EXPECT_EQ(batches(worker(numbers().batch(4).take(2), 2, 1)),
            (std::vector<std::vector<int64_t>>{{100, 101}, {102, 103}}));
  // An earlier batch before unbatch() only groups elements: the last batch is the global one.
  const Dataset regrouped = numbers().batch(5).unbatch().batch(4);
  EXPECT_EQ(sizes(batches(worker(regrouped, 2, 0))), (std::vector<int64_t>{2, 2, 2, 2, 2, 1}));
  EXPECT_EQ(flat(batches(worker(regrouped, 2, 0))), lines_of({0, 2}));
  // padded_batch: the lines (scalar strings), batched per worker.
  const Dataset padded = text_line_dataset(files_).padded_batch(4);
  auto it = worker(padded, 2, 1).iterator();
  const Tensor first = it.next()->tensor();
  EXPECT_EQ(first.shape(), (Shape{2}));
  EXPECT_TRUE(array_equal(first, Tensor::from_strings({"100", "101"})));
}

TEST_F(AutoShardTest, ShuffleBeforeTheBatchPermutesEachWorkersLines) {
  const Dataset global = numbers().shuffle(4, /*seed=*/7).batch(6);
  for (int64_t index : {0, 1}) {
    SCOPED_TRACE(index);
    const auto pass = flat(batches(worker(global, 2, index)));
    const auto mine = index == 0 ? lines_of({0, 2}) : lines_of({1, 3});
    EXPECT_EQ(sorted(pass), mine);
    EXPECT_NE(pass, mine);                                                  // shuffled
    EXPECT_EQ(flat(batches(worker(global, 2, index))), pass);               // deterministic
    EXPECT_NE(flat(batches(worker(global, 2, index), /*epoch=*/1)), pass);  // reshuffled each epoch
  }
}

TEST_F(AutoShardTest, CacheFilesArePerWorker) {
  const std::string path = (dir_ / "cache").string();
  const Dataset global = numbers().cache(path).batch(6);
  const Dataset w0 = worker(global, 2, 0), w1 = worker(global, 2, 1);
  const auto first0 = batches(w0), first1 = batches(w1);
  EXPECT_TRUE(fs::exists(path + ".worker-0-of-2/elements.chorus-cache"));
  EXPECT_TRUE(fs::exists(path + ".worker-1-of-2/elements.chorus-cache"));
  EXPECT_FALSE(fs::exists(path));
  // New file contents: later passes, and a restarted worker's pipeline, serve the cache.
  for (int k = 0; k < 4; ++k) write_lines(k, 50);
  EXPECT_EQ(batches(w0, 1), first0);
  EXPECT_EQ(batches(w1, 1), first1);
  EXPECT_EQ(flat(batches(worker(global, 2, 1), 2)), lines_of({1, 3}));
  EXPECT_EQ(flat(batches(worker(global, 2, 0), 2)), lines_of({0, 2}));
  // The unsharded pipeline has no cache yet: it reads the new contents.
  EXPECT_EQ(flat(batches(global)).front(), 50);
  // A trailing '/' names the same directory: the worker's cache is still a sibling.
  const std::string other = (dir_ / "other").string();
  (void)batches(worker(numbers().cache(other + "/").batch(2), 2, 0));
  EXPECT_TRUE(fs::exists(other + ".worker-0-of-2/elements.chorus-cache"));
  EXPECT_FALSE(fs::exists(other));
}

TEST_F(AutoShardTest, AnInMemoryCacheIsNotSharedWithTheInputPipeline) {
  const Dataset global = numbers().cache().batch(6);
  EXPECT_EQ(flat(batches(global)).size(), 18u);  // records all four files
  EXPECT_EQ(flat(batches(worker(global, 2, 1))), lines_of({1, 3}));
}

TEST_F(AutoShardTest, TheInputPipelineIsUnchanged) {
  const Dataset global = numbers().shuffle(3, /*seed=*/1).batch(6).prefetch(2);
  const auto before = batches(global);
  const Dataset mine = worker(global, 2, 1);
  EXPECT_EQ(pipeline(mine), pipeline(global));
  EXPECT_EQ(pipeline(global), "text_line_dataset -> map -> shuffle -> batch -> prefetch");
  EXPECT_EQ(batches(global), before);
  EXPECT_EQ(sizes(before), (std::vector<int64_t>{6, 6, 6}));
}

TEST_F(AutoShardTest, EveryStageIsRebuilt) {
  // Every transform once, and a zip of one input: the worker's pipeline has the same
  // stages, reads only its files, and keeps every other argument.
  const Dataset all = Dataset::zip({numbers()})
                          .map([](const Tree& e) { return e.list()[0]; }, {.num_parallel_calls = 2})
                          .filter([](const Tree& e) { return e.tensor().item<int64_t>() % 100 != 1; })
                          .shuffle(2, /*seed=*/3)
                          .cache()
                          .repeat(2)
                          .skip(1)
                          .shard(1, 0)
                          .enumerate()
                          .map([](const Tree& e) { return e.list()[1]; })
                          .batch(4)
                          .prefetch(1)
                          .take(100);
  const Dataset mine = worker(all, 2, 0);
  EXPECT_EQ(pipeline(mine), pipeline(all));
  // Files 0 and 2 without lines x01, twice, less the first element: 2 * 9 - 1 rows.
  const auto rows = flat(batches(mine));
  EXPECT_EQ(rows.size(), 17u);
  for (int64_t row : rows) EXPECT_TRUE(row / 100 == 0 || row / 100 == 2) << row;
  EXPECT_EQ(sizes(batches(mine)).front(), 2);
}

TEST_F(AutoShardTest, RefusesPipelinesItCannotShard) {
  EXPECT_EQ(refusal(Dataset::range(10).batch(2)),
            "FILE sharding does not apply to 'range -> batch': no stage reads files (it needs a source such as "
            "text_line_dataset)");
  EXPECT_EQ(refusal(Dataset::zip({numbers(), numbers()}).batch(2)),
            "FILE sharding does not apply to 'zip(text_line_dataset -> map, text_line_dataset -> map) -> batch': it "
            "has 2 sources, and sharding the files of one would change which elements zip pairs");
  EXPECT_EQ(refusal(Dataset::zip({numbers(), Dataset::range(100)}).batch(2)),
            "FILE sharding does not apply to 'zip(text_line_dataset -> map, range) -> batch': it has 2 sources, and "
            "sharding the files of one would change which elements zip pairs");
  EXPECT_EQ(refusal(numbers().batch(8), 5),
            "FILE sharding does not apply to 'text_line_dataset -> map -> batch': it reads 4 files, fewer than the 5 "
            "workers");
  EXPECT_EQ(refusal(numbers().shuffle(2, 1)),
            "FILE sharding does not apply to 'text_line_dataset -> map -> shuffle': no batch() or padded_batch() "
            "follows the source, so the global batch is unknown");
  EXPECT_EQ(refusal(numbers().batch(4).unbatch()),
            "FILE sharding does not apply to 'text_line_dataset -> map -> batch -> unbatch': unbatch() follows its "
            "last batch, so its elements are not global batches");
  // A null `why` is allowed.
  EXPECT_FALSE(shard_by_file(Dataset::range(4).batch(2), 2, 0, nullptr).has_value());
}

TEST_F(AutoShardTest, BadArguments) {
  EXPECT_THAT([&] { (void)shard_by_file(numbers().batch(1), 2, 0, nullptr); },
              ThrowsMessage<ValueError>(HasSubstr("FILE sharding: global batch 1 is smaller than the 2 workers")));
  EXPECT_THAT(
      [&] { (void)shard_by_file(numbers().batch(4), 0, 0, nullptr); },
      ThrowsMessage<ValueError>(HasSubstr("shard_by_file: expected num_workers >= 1. Received: num_workers=0")));
  EXPECT_THAT([&] { (void)shard_by_file(numbers().batch(4), 2, 2, nullptr); },
              ThrowsMessage<ValueError>(
                  HasSubstr("shard_by_file: expected 0 <= index < num_workers. Received: index=2, num_workers=2")));
}

TEST_F(AutoShardTest, PositionsOfAShardedPipelineRestore) {
  // Mid-file, across a file boundary, mid-shuffle and at the end; restored into the
  // pipeline of a fresh shard_by_file, as a restarted worker would.
  const Dataset global = text_line_dataset(files_).map(parse_line).shuffle(3, /*seed=*/5).batch(4).prefetch(2);
  testing::expect_restores_exactly([&] { return worker(global, 2, 0); }, {0, 1, 2, 3, 4}, /*epoch=*/1);
  const Dataset lines = numbers().batch(2);
  testing::expect_restores_exactly([&] { return worker(lines, 2, 1); }, {0, 1, 2, 3, 4});
}

TEST_F(AutoShardTest, AnotherWorkersPositionIsRefused) {
  const Dataset global = numbers().batch(2);
  auto it = worker(global, 2, 1).iterator();
  it.next();
  const IteratorPosition position = it.position();
  auto other = worker(global, 2, 0).iterator();
  EXPECT_THAT([&] { other.restore(position); },
              ThrowsMessage<ValueError>(HasSubstr("text_line_dataset: cannot restore a position in '" + files_[1] +
                                                  "' (file 0): this dataset's file 0 is '" + files_[0] + "'")));
}

TEST(AutoShardPolicyTest, NamesAreTfDatas) {
  EXPECT_EQ(auto_shard_policy_name(AutoShardPolicy::kAuto), "AUTO");
  EXPECT_EQ(auto_shard_policy_name(AutoShardPolicy::kFile), "FILE");
  EXPECT_EQ(auto_shard_policy_name(AutoShardPolicy::kData), "DATA");
  EXPECT_EQ(auto_shard_policy_name(AutoShardPolicy::kOff), "OFF");
}

}  // namespace
}  // namespace chorus::data
