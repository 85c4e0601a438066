// String tensors through every Dataset stage (issue 19): sources, map (sequential and
// parallel), filter, shuffle, batch, padded_batch, unbatch, cache (memory and file),
// prefetch, shard, take/skip, zip, positions; and ragged_batch / unbatch of ragged rows.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "chorus/core/ragged_tensor.h"
#include "tests/data/dataset_test_util.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::data {
namespace {

using namespace testing::test_names;
using testing::expect_restores_exactly;
using testing::fingerprints;

// Longer than std::string's small buffer: a byte copy of a std::string would show.
std::string word(int64_t i) { return "word-" + std::to_string(i) + std::string(static_cast<size_t>(i % 3) * 20, '#'); }

// n elements {"text": () string, "id": () int64}.
Dataset words(int64_t n) {
  std::vector<std::string> texts;
  for (int64_t i = 0; i < n; ++i) texts.push_back(word(i));
  return Dataset::from_tensor_slices(Tree{{"text", Tree(Tensor::from_strings(texts))},
                                          {"id", Tree(arange(0, static_cast<double>(n), 1, kInt64))}});
}

// The "text" strings of a pass, flattened across batches.
std::vector<std::string> texts(const Dataset& ds, int64_t epoch = 0) {
  std::vector<std::string> out;
  for (auto it = ds.iterator(epoch); auto e = it.next();) {
    const Tensor& t = (*e)["text"].tensor();
    out.insert(out.end(), t.strings().begin(), t.strings().end());
  }
  return out;
}

std::vector<std::string> expected_words(std::initializer_list<int64_t> ids) {
  std::vector<std::string> out;
  for (int64_t i : ids) out.push_back(word(i));
  return out;
}

std::vector<std::string> expected_range(int64_t begin, int64_t end) {
  std::vector<std::string> out;
  for (int64_t i = begin; i < end; ++i) out.push_back(word(i));
  return out;
}

Tree shout(const Tree& e) {
  return Tree{{"text", Tree(Tensor::from_string(e["text"].tensor().string_at(0) + "!"))}, {"id", e["id"]}};
}

class StringDatasetTest : public chorus::testing::TempDirTest {};

TEST_F(StringDatasetTest, SlicesMapAndFilter) {
  EXPECT_EQ(texts(words(4)), expected_range(0, 4));
  EXPECT_EQ(words(4).iterator().next()->to_string(), "{\"id\": () int64, \"text\": () string}");
  std::vector<std::string> shouted;
  for (const std::string& w : expected_range(0, 40)) shouted.push_back(w + "!");
  EXPECT_EQ(texts(words(40).map(shout)), shouted);
  EXPECT_EQ(texts(words(40).map(shout, {.num_parallel_calls = 4})), shouted);
  // tf.strings.length(x) > 20: the long words only.
  const Dataset long_words =
      words(7).filter([](const Tree& e) { return e["text"].tensor().string_at(0).size() > 20; });
  EXPECT_EQ(texts(long_words), expected_words({1, 2, 4, 5}));
}

TEST_F(StringDatasetTest, ShuffleKeepsEveryStringAndRestores) {
  const Dataset shuffled = words(50).shuffle(16, /*seed=*/3);
  std::vector<std::string> got = texts(shuffled);
  EXPECT_NE(got, expected_range(0, 50));
  std::sort(got.begin(), got.end());
  std::vector<std::string> all = expected_range(0, 50);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(got, all);
  EXPECT_EQ(texts(shuffled), texts(shuffled));  // same seed, same pass, same order
  expect_restores_exactly([] { return words(30).shuffle(8, /*seed=*/1).batch(4); }, {0, 1, 3, 7, 8});
}

TEST_F(StringDatasetTest, BatchPaddedBatchAndUnbatch) {
  auto it = words(5).batch(2).iterator();
  const Tree first = *it.next();
  EXPECT_TRUE(array_equal(first["text"].tensor(), Tensor::from_strings({word(0), word(1)})));
  EXPECT_EQ(texts(words(5).batch(2)), expected_range(0, 5));
  EXPECT_EQ(texts(words(5).batch(2, /*drop_remainder=*/true)), expected_range(0, 4));
  EXPECT_EQ(texts(words(5).batch(2).unbatch()), expected_range(0, 5));
  EXPECT_EQ(texts(words(6).batch(3).batch(2).unbatch().unbatch()), expected_range(0, 6));
  // Element i holds i strings: padded with "" to the longest in the batch.
  const Dataset rows = Dataset::range(4).map([](const Tree& e) {
    const int64_t n = e.tensor().item<int64_t>();
    std::vector<std::string> row;
    for (int64_t i = 0; i < n; ++i) row.push_back(word(i));
    return Tree{{"text", Tree(Tensor::from_strings(row))}};
  });
  auto padded = rows.padded_batch(2).iterator();
  EXPECT_TRUE(array_equal((*padded.next())["text"].tensor(), Tensor::from_strings(Shape{2, 1}, {"", word(0)})));
  EXPECT_TRUE(array_equal((*padded.next())["text"].tensor(),
                          Tensor::from_strings(Shape{2, 3}, {word(0), word(1), "", word(0), word(1), word(2)})));
  auto wide = rows.padded_batch(4, {.padded_shapes = {{4}}}).iterator();
  EXPECT_EQ((*wide.next())["text"].tensor().shape(), (Shape{4, 4}));
}

TEST_F(StringDatasetTest, CacheInMemoryAndInAFile) {
  EXPECT_EQ(texts(words(9).cache()), expected_range(0, 9));
  const Dataset cached = words(9).cache();
  EXPECT_EQ(texts(cached, 0), texts(cached, 1));
  const std::string dir = this->dir() + "/c";
  EXPECT_EQ(texts(words(9).batch(4).cache(dir), 0), expected_range(0, 9));
  // A new pipeline of the same shape reads the file back instead of its own strings.
  const Dataset other = Dataset::from_tensor_slices(
      Tree{{"text", Tree(Tensor::from_strings(std::vector<std::string>(9, "not read")))},
           {"id", Tree(arange(0, 9, 1, kInt64))}});
  EXPECT_TRUE(std::filesystem::exists(dir + "/elements.chorus-cache"));
  EXPECT_EQ(texts(other.batch(4).cache(dir)), expected_range(0, 9));
  expect_restores_exactly([&] { return words(9).batch(2).cache(dir + "2"); }, {0, 2, 4});
}

// A cache file as bytes, and written back.
std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST_F(StringDatasetTest, CacheFileVersions) {
  // A numeric pipeline's file with the version set to 1 (the layout before strings) still reads.
  const std::string numbers = dir() + "/n";
  const std::string numbers_file = numbers + "/elements.chorus-cache";
  const auto expected = fingerprints(Dataset::range(5).cache(numbers));
  std::string bytes = read_bytes(numbers_file);
  ASSERT_EQ(bytes[8], 3);  // the version, after the 8-byte magic
  bytes[8] = 1;
  std::ofstream(numbers_file, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_EQ(fingerprints(Dataset::range(5).cache(numbers)), expected);
  // A version-1 file cannot hold strings: a string tensor in one is corruption.
  const std::string strings = dir() + "/s";
  const std::string strings_file = strings + "/elements.chorus-cache";
  fingerprints(words(2).cache(strings));
  bytes = read_bytes(strings_file);
  bytes[8] = 1;
  std::ofstream(strings_file, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_THAT([&] { fingerprints(words(2).cache(strings)); },
              ThrowsMessage<IOError>(HasSubstr("expected a dtype (0-4) for a version 1 file, found 5")));
  // A newer version is refused by name.
  bytes[8] = 4;
  std::ofstream(strings_file, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_THAT([&] { fingerprints(words(2).cache(strings)); },
              ThrowsMessage<IOError>(HasSubstr("byte offset 8: expected version 1 to 3, found 4")));
  // A string length past the end of the file is caught.
  std::filesystem::remove(strings_file);
  fingerprints(words(2).cache(strings));
  bytes = read_bytes(strings_file);
  const size_t at = bytes.find("word-0") - 8;  // the u64 length before the first string
  bytes[at + 7] = 0x7f;
  std::ofstream(strings_file, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_THAT([&] { fingerprints(words(2).cache(strings)); },
              ThrowsMessage<IOError>(HasSubstr(fmt::format("byte offset {}: string length", at))));
}

TEST_F(StringDatasetTest, PrefetchShardTakeSkipAndZip) {
  EXPECT_EQ(texts(words(20).prefetch(4)), expected_range(0, 20));
  EXPECT_EQ(texts(words(10).shard(3, 1)), expected_words({1, 4, 7}));
  EXPECT_EQ(texts(words(10).skip(2).take(3)), expected_range(2, 5));
  const Dataset zipped = Dataset::zip({words(3), Dataset::range(2)});
  auto it = zipped.iterator();
  const Tree first = *it.next();
  EXPECT_EQ(first[0]["text"].tensor().string_at(0), word(0));
  EXPECT_EQ(first[1].tensor().item<int64_t>(), 0);
  EXPECT_TRUE(it.next().has_value());
  EXPECT_FALSE(it.next().has_value());
  expect_restores_exactly([] { return words(12).map(shout, {.num_parallel_calls = 3}).prefetch(2).skip(1); },
                          {0, 3, 10});
}

// Element i: {"tokens": (i % 4,) string, "label": () int32}.
Dataset sentences(int64_t n) {
  return Dataset::range(n).map([](const Tree& e) {
    const int64_t i = e.tensor().item<int64_t>();
    std::vector<std::string> tokens;
    for (int64_t k = 0; k < i % 4; ++k) tokens.push_back(word(i * 10 + k));
    return Tree{{"tokens", Tree(Tensor::from_strings(tokens))},
                {"label", Tree(from_values<int32_t>({static_cast<int32_t>(i)}, Shape{}))}};
  });
}

TEST_F(StringDatasetTest, RaggedBatchAndUnbatchGiveTheRowsBack) {
  auto it = sentences(6).ragged_batch(4).iterator();
  const Tree batch = *it.next();
  ASSERT_TRUE(RaggedTensor::is_ragged(batch["tokens"]));
  const RaggedTensor tokens = RaggedTensor::from_tree(batch["tokens"]);
  EXPECT_EQ(tokens.row_lengths().to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_TRUE(array_equal(tokens.row(2), Tensor::from_strings({word(20), word(21)})));
  EXPECT_EQ(batch["label"].tensor().to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3}));  // scalars: dense
  EXPECT_EQ(RaggedTensor::from_tree((*it.next())["tokens"]).nrows(), 2);
  EXPECT_FALSE(it.next().has_value());
  EXPECT_EQ(sentences(6).ragged_batch(4, /*drop_remainder=*/true).cardinality(), 1);
  // unbatch gives every element back; so do shuffle, cache and prefetch on the way.
  const Dataset round_trip =
      sentences(9).ragged_batch(4).shuffle(3, /*seed=*/2).cache(dir() + "/r").prefetch(2).unbatch();
  std::vector<std::string> got = fingerprints(round_trip), want = fingerprints(sentences(9));
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  expect_restores_exactly([] { return sentences(10).ragged_batch(3).unbatch(); }, {0, 2, 5, 9});
}

TEST_F(StringDatasetTest, RaggedBatchErrorsNameTheElement) {
  const Dataset mixed = Dataset::range(3).map([](const Tree& e) {
    const int64_t i = e.tensor().item<int64_t>();
    return i == 2 ? Tree(from_values<int32_t>({1})) : Tree(Tensor::from_strings({"a"}));
  });
  EXPECT_THAT([&] { fingerprints(mixed.ragged_batch(3)); },
              ThrowsMessage<DTypeError>(HasSubstr("ragged_batch: element 2 of the batch has dtype int32 at (the "
                                                  "element), but element 0 has string")));
  EXPECT_THAT([&] { fingerprints(sentences(4).ragged_batch(2).ragged_batch(2)); },
              ThrowsMessage<ValueError>(HasSubstr("ragged_batch: element 0 of the batch already holds a RaggedTensor")));
  EXPECT_THAT([&] { words(3).ragged_batch(0); },
              ThrowsMessage<ValueError>(HasSubstr("ragged_batch: expected batch_size > 0")));
}

}  // namespace
}  // namespace chorus::data
