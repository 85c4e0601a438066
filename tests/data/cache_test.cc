// cache() in memory and on disk: later passes replay the first complete pass without
// touching the input, partial passes are dropped, files are written atomically and read
// back by a new pipeline, and corrupt files are IOErrors naming file and byte offset.
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "chorus/data/cache_file.h"
#include "tests/data/dataset_test_util.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::data {
namespace {

namespace fs = std::filesystem;
using namespace testing::test_names;
using testing::fingerprints;

// A generator dataset of n mixed elements ({"f": (3,) float32, "i": () int64, "b": (2,)
// bfloat16, "ok": () bool} pairs with a list) counting the elements it produces.
struct Source {
  std::shared_ptr<std::atomic<int64_t>> counter = std::make_shared<std::atomic<int64_t>>(0);
  int64_t pulls() const { return counter->load(); }
  Dataset make(int64_t n, int64_t cardinality = kUnknownCardinality) const {
    return Dataset::from_generator(
        [n, pulls = counter](int64_t epoch) -> Dataset::Generator {
          return [n, epoch, pulls, i = int64_t{0}]() mutable -> std::optional<Tree> {
            if (i >= n) return std::nullopt;
            ++*pulls;
            const auto seed = static_cast<uint64_t>(epoch * 1000 + i);
            Tree element = Tree::list({Tree{{"f", chorus::testing::random_tensor({3}, seed)},
                                            {"i", from_values<int64_t>({i}, Shape{})},
                                            {"b", chorus::testing::random_tensor({2}, seed, -1, 1, kBFloat16)},
                                            {"ok", from_values<bool>({i % 2 == 0}, Shape{})}},
                                       Tree::list({from_values<int32_t>({static_cast<int32_t>(epoch)}, Shape{1})})});
            ++i;
            return element;
          };
        },
        cardinality);
  }
};

class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::path(::testing::TempDir()) / ("chorus_cache_test_" + std::to_string(::getpid()) + "_" +
                                              std::to_string(counter++));
    fs::remove_all(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    if (fs::exists(path_)) {
      for (const auto& entry : fs::directory_iterator(path_)) out.push_back(entry.path().filename().string());
    }
    return out;
  }

 private:
  fs::path path_;
};

TEST(DatasetCacheTest, MemoryCacheServesLaterPassesWithoutTheInput) {
  Source source;
  Dataset ds = source.make(7).cache();
  const auto first = fingerprints(ds, 0);
  EXPECT_EQ(source.pulls(), 7);
  EXPECT_EQ(fingerprints(ds, 1), first);  // epoch 1 of the input would differ: it is not read
  EXPECT_EQ(fingerprints(ds, 5), first);
  EXPECT_EQ(source.pulls(), 7);
}

TEST(DatasetCacheTest, PartialPassIsNotKept) {
  Source source;
  Dataset ds = source.make(7).cache();
  {
    auto it = ds.iterator(0);
    for (int i = 0; i < 4; ++i) it.next();
  }
  EXPECT_EQ(source.pulls(), 4);
  const auto second = fingerprints(ds, 1);  // reads (and records) input pass 1
  EXPECT_EQ(second, fingerprints(source.make(7), 1));
  EXPECT_EQ(source.pulls(), 4 + 7 + 7);
  EXPECT_EQ(fingerprints(ds, 2), second);
  EXPECT_EQ(source.pulls(), 4 + 7 + 7);
}

TEST(DatasetCacheTest, KnownCardinalityCompletesWithoutReadingTheEnd) {
  Source source;
  Dataset ds = source.make(5, /*cardinality=*/5).cache();
  auto it = ds.iterator(0);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(it.next());  // never asks for a sixth
  const int64_t pulls = source.pulls();
  EXPECT_EQ(fingerprints(ds, 1).size(), 5u);
  EXPECT_EQ(source.pulls(), pulls);
}

TEST(DatasetCacheTest, CacheFreezesAReshuffledInput) {
  Dataset ds = Dataset::range(100).shuffle(100, 3, /*reshuffle_each_iteration=*/true).cache();
  const auto first = testing::scalars(ds, 0);  // records pass 0
  EXPECT_EQ(testing::scalars(ds, 1), first);
  EXPECT_EQ(first, testing::scalars(Dataset::range(100).shuffle(100, 3, true), 0));
  EXPECT_NE(first, testing::scalars(Dataset::range(100).shuffle(100, 3, true), 1));
}

TEST(DatasetCacheTest, IteratorsOnManyThreadsShareOneCache) {
  Source source;
  Dataset ds = source.make(300).batch(7).cache();
  const auto expected = fingerprints(source.make(300).batch(7), 0);
  const int64_t pulls_before = source.pulls();
  std::vector<std::vector<std::string>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { got[t] = fingerprints(ds, t); });
  for (auto& thread : threads) thread.join();
  // Every thread saw a whole pass; whichever finished first is the cache.
  for (int t = 0; t < 4; ++t) EXPECT_EQ(got[t].size(), expected.size());
  const auto cached = fingerprints(ds, 9);
  EXPECT_TRUE(std::find(got.begin(), got.end(), cached) != got.end());
  EXPECT_LE(source.pulls() - pulls_before, 4 * 300);
}

TEST(DatasetCacheTest, FileCacheIsReadBackByANewPipeline) {
  TempDir dir;
  Source source;
  const auto expected = fingerprints(source.make(23), 0);
  *source.counter = 0;
  EXPECT_EQ(fingerprints(source.make(23).cache(dir.str()), 0), expected);
  EXPECT_EQ(source.pulls(), 23);
  EXPECT_EQ(dir.files(), std::vector<std::string>{"elements.chorus-cache"});  // no temporary left
  // A new pipeline (as in a new process) with the same path reads the file.
  Dataset again = source.make(23).cache(dir.str());
  EXPECT_EQ(fingerprints(again, 4), expected);
  EXPECT_EQ(source.pulls(), 23);
}

TEST(DatasetCacheTest, FileCacheOfAPartialPassLeavesNoFile) {
  TempDir dir;
  Source source;
  Dataset ds = source.make(10).cache(dir.str());
  {
    auto it = ds.iterator();
    it.next();
    it.next();
  }
  EXPECT_TRUE(dir.files().empty());
  EXPECT_EQ(fingerprints(ds, 0).size(), 10u);
  EXPECT_EQ(dir.files().size(), 1u);
}

TEST(DatasetCacheTest, CorruptFilesAreIOErrors) {
  TempDir dir;
  Source source;
  fingerprints(source.make(5).cache(dir.str()));
  const std::string file = dir.str() + "/elements.chorus-cache";
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write = [&](const std::string& content) { std::ofstream(file, std::ios::binary | std::ios::trunc) << content; };

  write(bytes.substr(0, bytes.size() - 5));  // truncated: no trailer
  EXPECT_THAT([&] { fingerprints(source.make(5).cache(dir.str())); },
              ThrowsMessage<IOError>(HasSubstr("cache: " + file + ": byte offset")));
  EXPECT_THAT([&] { fingerprints(source.make(5).cache(dir.str())); },
              ThrowsMessage<IOError>(HasSubstr("expected the trailer")));

  std::string bad_magic = bytes;
  bad_magic[0] = 'X';
  write(bad_magic);
  EXPECT_THAT([&] { fingerprints(source.make(5).cache(dir.str())); },
              ThrowsMessage<IOError>(HasSubstr(file + ": byte offset 0: expected the magic number")));

  // Elements cut short with the trailer intact: the element reader hits the trailer.
  std::string cut = bytes.substr(0, bytes.size() - 17 - 10) + bytes.substr(bytes.size() - 17);
  write(cut);
  EXPECT_THAT([&] { fingerprints(source.make(5).cache(dir.str())); },
              ThrowsMessage<IOError>(HasSubstr("truncated: expected")));

  std::string bad_kind = bytes;
  const size_t first_element = bytes.find('\xE1');
  bad_kind[first_element + 1] = 9;  // tree kind 9
  write(bad_kind);
  EXPECT_THAT([&] { fingerprints(source.make(5).cache(dir.str())); },
              ThrowsMessage<IOError>(HasSubstr(fmt::format("byte offset {}: expected a tree kind (0-3), found 9",
                                                           first_element + 1))));

  write(bytes);
  EXPECT_THAT([&] { fingerprints(source.make(5).take(3).cache(dir.str())); },
              ThrowsMessage<ValueError>(HasSubstr("holds elements of the pipeline 'from_generator', not of "
                                                  "'from_generator -> take'")));
}

// Batches of uint8 images (MNIST's pixels as load_data gives them) are cached as uint8:
// one byte per pixel on disk, read back as uint8 with the same bytes.
TEST(DatasetCacheTest, FileCacheHoldsUInt8AsBytes) {
  TempDir dir;
  Tensor images = Tensor::empty({10, 4, 3}, kUInt8);
  for (int64_t i = 0; i < images.numel(); ++i) images.data<uint8_t>()[i] = static_cast<uint8_t>(i * 7);
  fingerprints(Dataset::from_tensor_slices(Tree(images)).batch(4).cache(dir.str()));
  const std::string file = dir.str() + "/elements.chorus-cache";
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  uint32_t version = 0, length = 0;
  std::memcpy(&version, bytes.data() + 8, 4);
  std::memcpy(&length, bytes.data() + 12, 4);
  EXPECT_EQ(version, 3u);
  CacheFileReader reader(file, bytes.substr(16, length));
  std::vector<Tensor> batches;
  while (std::optional<Tree> batch = reader.next()) batches.push_back(batch->tensor());
  ASSERT_EQ(batches.size(), 3u);
  for (const Tensor& batch : batches) EXPECT_EQ(batch.dtype(), kUInt8);
  EXPECT_TRUE(array_equal(batches[2], images.first_axis_slice(8, 10)));
  EXPECT_EQ(fs::file_size(file), bytes.size());
  EXPECT_LT(bytes.size(), static_cast<size_t>(images.numel()) + 400);  // bytes, not floats

  // A version 2 file cannot hold uint8 (dtype 6): the reader names the byte.
  std::string old = bytes;
  old[8] = 2;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << old;
  const size_t dtype_at = bytes.find('\xE1', 16 + length) + 2;  // marker, tree kind, dtype
  EXPECT_THAT([&] { CacheFileReader(file, bytes.substr(16, length)).next(); },
              ThrowsMessage<IOError>(HasSubstr(
                  fmt::format("byte offset {}: expected a dtype (0-5) for a version 2 file, found 6", dtype_at))));
}

}  // namespace
}  // namespace chorus::data
