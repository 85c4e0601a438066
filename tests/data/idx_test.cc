#include "chorus/data/idx.h"

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>
#include <zlib.h>

#include <fmt/format.h>

#include "chorus/data/mnist.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::data {
namespace {

using namespace testing::test_names;

// Big-endian IDX bytes: magic, dims, then `payload` (already big-endian).
std::string idx_bytes(uint8_t type, const std::vector<uint32_t>& dims, const std::string& payload) {
  std::string out = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((d >> shift) & 0xff));
  }
  return out + payload;
}

template <class T>
std::string big_endian(const std::vector<T>& values) {
  std::string out;
  for (const T v : values) {
    uint64_t bits = 0;
    if constexpr (sizeof(T) == 8) bits = std::bit_cast<uint64_t>(v);
    if constexpr (sizeof(T) == 4) bits = std::bit_cast<uint32_t>(v);
    if constexpr (sizeof(T) == 2) bits = std::bit_cast<uint16_t>(v);
    if constexpr (sizeof(T) == 1) bits = std::bit_cast<uint8_t>(v);
    for (int shift = 8 * static_cast<int>(sizeof(T)) - 8; shift >= 0; shift -= 8) {
      out.push_back(static_cast<char>((bits >> shift) & 0xff));
    }
  }
  return out;
}

std::string gzip(const std::string& raw) {
  z_stream s{};
  EXPECT_EQ(deflateInit2(&s, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&s, raw.size()) + 64, '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  s.avail_in = static_cast<uInt>(raw.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&s, Z_FINISH), Z_STREAM_END);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

template <class T>
std::vector<T> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> out(n);
  for (T& v : out) {
    if constexpr (std::is_floating_point_v<T>) {
      v = static_cast<T>(std::uniform_real_distribution<double>(-1e3, 1e3)(rng));
    } else {
      v = static_cast<T>(rng());  // every bit pattern, negatives included
    }
  }
  return out;
}

class IdxTest : public testing::TempDirTest {
 protected:
  // Writes random values as an IDX file of `type` (plain and gzipped) and checks the
  // tensor read_idx returns against them.
  template <class T>
  void check_round_trip(uint8_t type, const std::vector<uint32_t>& dims, uint32_t seed, DType expected_dtype) {
    size_t n = 1;
    for (uint32_t d : dims) n *= d;
    const std::vector<T> values = random_values<T>(n, seed);
    const std::string bytes = idx_bytes(type, dims, big_endian(values));
    for (const bool gz : {false, true}) {
      const std::string path = write(fmt::format("type{:02x}{}", type, gz ? ".gz" : ""), gz ? gzip(bytes) : bytes);
      SCOPED_TRACE(path);
      const Tensor t = read_idx(path);
      EXPECT_EQ(t.dtype(), expected_dtype);
      ASSERT_EQ(t.shape().to_vector(), std::vector<int64_t>(dims.begin(), dims.end()));
      const auto got = t.to_vector<double>();
      for (size_t i = 0; i < n; ++i) {
        const double want = expected_dtype == kFloat32 ? static_cast<double>(static_cast<float>(values[i]))
                                                       : static_cast<double>(values[i]);
        ASSERT_EQ(got[i], want) << "element " << i;
      }
    }
  }

};

TEST_F(IdxTest, EveryTypePlainAndGzipped) {
  check_round_trip<uint8_t>(0x08, {7}, 1, kUInt8);
  check_round_trip<int8_t>(0x09, {3, 5}, 2, kInt32);
  check_round_trip<int16_t>(0x0B, {1023}, 3, kInt32);
  check_round_trip<int32_t>(0x0C, {2, 3, 7}, 4, kInt32);
  check_round_trip<float>(0x0D, {1}, 5, kFloat32);
  check_round_trip<double>(0x0E, {7, 1, 3}, 6, kFloat32);
}

TEST_F(IdxTest, LargerThanOneChunk) {
  // 3 MiB of ubytes crosses the 1 MiB decoding chunks in both sources, converted to float32
  // and read straight into a uint8 tensor.
  const std::vector<uint8_t> values = random_values<uint8_t>(3 * 1024 * 1024 + 7, 9);
  const std::string bytes = idx_bytes(0x08, {static_cast<uint32_t>(values.size())}, big_endian(values));
  for (const std::string& path : {write("big", bytes), write("big.gz", gzip(bytes))}) {
    const auto got = read_idx(path, kFloat32).to_vector<float>();
    ASSERT_EQ(got.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(got[i], values[i]) << path << " element " << i;
    const Tensor raw = read_idx(path);
    ASSERT_EQ(raw.dtype(), kUInt8);
    EXPECT_EQ(std::memcmp(raw.data<uint8_t>(), values.data(), values.size()), 0) << path;
  }
}

TEST_F(IdxTest, ConvertsToRequestedDType) {
  const std::vector<uint8_t> values = random_values<uint8_t>(7, 11);
  const std::string path = write("u8", idx_bytes(0x08, {7}, big_endian(values)));
  for (const DType dtype : {kFloat32, kBFloat16, kInt32, kInt64, kUInt8}) {
    const Tensor t = read_idx(path, dtype);
    EXPECT_EQ(t.dtype(), dtype);
    const auto got = t.to_vector<double>();
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(got[i], values[i]) << dtype_name(dtype);
  }
  const std::string floats = write("f32", idx_bytes(0x0D, {2}, big_endian(std::vector<float>{1.5f, -2.25f})));
  EXPECT_EQ(read_idx(floats, kBFloat16).to_vector<float>(), (std::vector<float>{1.5f, -2.25f}));
  EXPECT_THAT([&] { read_idx(floats, kInt32); },
              ThrowsMessage<DTypeError>(HasSubstr("cannot read IDX float32 data as int32 (expected float32 or bfloat16)")));
  EXPECT_THAT([&] { read_idx(path, kBool); }, ThrowsMessage<DTypeError>(HasSubstr("as bool")));
  // uint8 holds ubyte data only: wider integers would wrap, floats would truncate.
  const std::string ints = write("i32", idx_bytes(0x0C, {1}, big_endian(std::vector<int32_t>{300})));
  EXPECT_THAT([&] { read_idx(ints, kUInt8); },
              ThrowsMessage<DTypeError>(HasSubstr(
                  "read_idx: " + ints + ": cannot read IDX int32 data as uint8 (expected float32, bfloat16, int32 or int64)")));
  EXPECT_THAT([&] { read_idx(floats, kUInt8); },
              ThrowsMessage<DTypeError>(HasSubstr("cannot read IDX float32 data as uint8 (expected float32 or bfloat16)")));
}

TEST_F(IdxTest, GzipIsDetectedByContentNotName) {
  const std::string bytes = idx_bytes(0x08, {3}, std::string("\x01\x02\x03", 3));
  EXPECT_EQ(read_idx(write("plain.gz", bytes)).to_vector<int>(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(read_idx(write("packed", gzip(bytes))).to_vector<int>(), (std::vector<int>{1, 2, 3}));
  // Concatenated gzip members (`cat a.gz b.gz`) are one stream.
  const std::string members = gzip(bytes.substr(0, 5)) + gzip(bytes.substr(5));
  EXPECT_EQ(read_idx(write("members.gz", members)).to_vector<int>(), (std::vector<int>{1, 2, 3}));
}

TEST_F(IdxTest, GzippedBytesAreInflatedWholeAndNotCopied) {
  const std::string bytes = idx_bytes(0x08, {2, 3}, "abcdef");
  const std::vector<int> expected = {'a', 'b', 'c', 'd', 'e', 'f'};
  const Tensor whole = read_idx(write("whole.gz", gzip(bytes)));
  EXPECT_EQ(whole.shape(), Shape({2, 3}));
  EXPECT_EQ(whole.to_vector<int>(), expected);
  // The tensor is the inflated buffer itself, past the 12-byte header.
  EXPECT_EQ(whole.impl()->offset, 12u);
  // Several members go through the streaming reader, into a tensor of their own.
  const Tensor streamed = read_idx(write("members.gz", gzip(bytes.substr(0, 5)) + gzip(bytes.substr(5))));
  EXPECT_EQ(streamed.to_vector<int>(), expected);
  EXPECT_EQ(streamed.impl()->offset, 0u);
}

TEST_F(IdxTest, WrongMagicNamesFileAndBytes) {
  const std::string path = write("bad-magic", idx_bytes(0x07, {1}, "x"));
  EXPECT_THAT([&] { read_idx(path); },
              ThrowsMessage<IOError>(HasSubstr(
                  "bad-magic: expected IDX magic 0x0000 and a known type code, found 0x00000701 at byte 0")));
  // A file gzipped twice decompresses to a gzip header.
  const std::string twice = write("twice.gz", gzip(gzip(idx_bytes(0x08, {1}, "x"))));
  EXPECT_THAT([&] { read_idx(twice); },
              ThrowsMessage<IOError>(HasSubstr("twice.gz: expected IDX magic 0x0000 and a known type code, found 0x1f8b08")));
  const std::string text = write("text", "hello world");
  EXPECT_THAT([&] { read_idx(text); }, ThrowsMessage<IOError>(HasSubstr("found 0x68656c6c at byte 0")));
}

TEST_F(IdxTest, ShortFilesSayWhatIsMissing) {
  const std::string images = idx_bytes(0x08, {60000, 28, 28}, std::string(1000, '\x07'));
  EXPECT_THAT([&] { read_idx(write("train-images-idx3-ubyte", images)); },
              ThrowsMessage<IOError>(HasSubstr("train-images-idx3-ubyte: expected 47040000 bytes of data after the "
                                               "header (dims (60000, 28, 28)), found 1000 (file truncated?)")));
  // Gzipped, inflated whole: the same exact count.
  EXPECT_THAT([&] { read_idx(write("train-images-idx3-ubyte.gz", gzip(images))); },
              ThrowsMessage<IOError>(HasSubstr("expected 47040000 bytes of data after the header (dims (60000, 28, "
                                               "28)), found 1000 (file truncated?)")));
  // Streamed (two members): a header promising far more than the compressed rest can hold
  // fails before allocating.
  EXPECT_THAT([&] { read_idx(write("two-members.gz", gzip(images.substr(0, 8)) + gzip(images.substr(8)))); },
              ThrowsMessage<IOError>(HasSubstr("expected 47040000 bytes of data after the header (dims (60000, 28, "
                                               "28)), more than the rest of this gzip file can hold")));
  const std::string small = idx_bytes(0x0C, {100, 10}, std::string(300, '\x01'));
  EXPECT_THAT([&] { read_idx(write("small.gz", gzip(small))); },
              ThrowsMessage<IOError>(HasSubstr("small.gz: expected 4000 bytes of data after the header (dims (100, "
                                               "10)), found 300 (file truncated?)")));
  EXPECT_THAT([&] { read_idx(write("stub", std::string("\0\0", 2))); },
              ThrowsMessage<IOError>(HasSubstr("stub: expected a 4-byte IDX header, found 2 bytes (file truncated?)")));
  EXPECT_THAT([&] { read_idx(write("dims", idx_bytes(0x08, {1, 2}, "").substr(0, 9))); },
              ThrowsMessage<IOError>(HasSubstr("dims: expected 2 dimension sizes (4 bytes each) after the magic "
                                               "number, found 5 bytes (file truncated?)")));
}

TEST_F(IdxTest, TruncatedAndCorruptGzip) {
  const std::vector<uint8_t> values = random_values<uint8_t>(20000, 3);
  const std::string packed = gzip(idx_bytes(0x08, {20000}, big_endian(values)));
  EXPECT_THAT([&] { read_idx(write("cut.gz", packed.substr(0, packed.size() / 2))); },
              ThrowsMessage<IOError>(HasSubstr("cut.gz: expected 20000 bytes of data after the header (dims (20000,)), "
                                               "found")));
  std::string corrupt = packed;
  for (size_t i = 100; i < 140; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  EXPECT_THAT([&] { read_idx(write("corrupt.gz", corrupt)); },
              ThrowsMessage<IOError>(HasSubstr("corrupt.gz: corrupt gzip data at compressed byte")));
  EXPECT_THAT([&] { read_idx(write("junk.gz", gzip(idx_bytes(0x08, {1}, "x")) + "junk")); },
              ThrowsMessage<IOError>(HasSubstr("junk.gz: expected another gzip member or the end of the file, found "
                                               "other data at byte")));
}

TEST_F(IdxTest, DimsThatDoNotMatchTheFileSize) {
  const std::string path = write("long", idx_bytes(0x08, {2, 3}, std::string(10, '\x01')));
  EXPECT_THAT([&] { read_idx(path); },
              ThrowsMessage<IOError>(HasSubstr("long: expected 6 bytes of data after the header (dims (2, 3)), found "
                                               "10 (the dimensions do not match the file size)")));
  const std::string gz = write("long.gz", gzip(idx_bytes(0x08, {2, 3}, std::string(10, '\x01'))));
  EXPECT_THAT([&] { read_idx(gz); }, ThrowsMessage<IOError>(HasSubstr("found 10 (the dimensions do not match")));
  EXPECT_THAT([&] { read_idx(write("rank9", idx_bytes(0x08, std::vector<uint32_t>(9, 1), "x"))); },
              ThrowsMessage<IOError>(HasSubstr("rank9: expected an IDX rank from 1 to 8, found 9 at byte 3")));
  EXPECT_THAT([&] { read_idx(write("rank0", idx_bytes(0x08, {}, ""))); },
              ThrowsMessage<IOError>(HasSubstr("found 0 at byte 3")));
  EXPECT_THAT([&] { read_idx((dir_ / "missing").string()); },
              ThrowsMessage<IOError>(HasSubstr("missing: cannot open")));
}

TEST_F(IdxTest, MnistLoadDataFromFilesWithOrWithoutGz) {
  const std::vector<uint8_t> pixels = random_values<uint8_t>(3 * 28 * 28, 5);
  write("t10k-images-idx3-ubyte", idx_bytes(0x08, {3, 28, 28}, big_endian(pixels)));
  write("t10k-labels-idx1-ubyte.gz", gzip(idx_bytes(0x08, {3}, std::string("\x07\x02\x01", 3))));
  const Tree test = datasets::mnist::load_data(dir_.string(), datasets::Split::kTest);
  ASSERT_TRUE(test.is_list());
  const Tensor& images = test[0].tensor();
  EXPECT_EQ(images.dtype(), kUInt8);  // as Keras's load_data
  EXPECT_EQ(images.shape(), Shape({3, 28, 28}));
  const auto got = images.to_vector<float>();
  for (size_t i = 0; i < pixels.size(); ++i) ASSERT_EQ(got[i], pixels[i]);
  EXPECT_EQ(test[1].tensor().to_vector<int>(), (std::vector<int>{7, 2, 1}));
  const data::Dataset dataset = datasets::mnist::dataset(dir_.string(), datasets::Split::kTest);
  EXPECT_EQ(dataset.cardinality(), 3);
  auto it = dataset.iterator();
  it.next();
  const Tree second = *it.next();
  EXPECT_EQ(second[0].tensor().shape(), Shape({28, 28}));
  EXPECT_EQ(second[0].tensor().dtype(), kUInt8);
  EXPECT_EQ(second[0].tensor().to_vector<float>()[5], pixels[28 * 28 + 5]);
  EXPECT_EQ(second[1].tensor().item<int>(), 2);

  write("t10k-labels-idx1-ubyte.gz", gzip(idx_bytes(0x08, {2}, std::string("\x07\x02", 2))));
  EXPECT_THAT([&] { datasets::mnist::load_data(dir_.string(), datasets::Split::kTest); },
              ThrowsMessage<IOError>(HasSubstr("t10k-labels-idx1-ubyte.gz: expected 3 labels (one per image in")));
  EXPECT_THAT([&] { datasets::mnist::load_data(dir_.string(), datasets::Split::kTrain); },
              ThrowsMessage<IOError>(HasSubstr("train-images-idx3-ubyte.gz: cannot open: No such file or directory")));
}

TEST(IdxRealDataTest, MnistTrainingSet) {
  const auto dir = testing::shared_data_dir("mnist");
  if (!dir) GTEST_SKIP() << testing::shared_data_missing("mnist");
  const Tree train = datasets::mnist::load_data(*dir);
  const Tensor& images = train[0].tensor();
  const Tensor& labels = train[1].tensor();
  EXPECT_EQ(images.shape(), Shape({60000, 28, 28}));
  EXPECT_EQ(labels.shape(), Shape({60000}));
  EXPECT_EQ(labels.dtype(), kInt32);
  EXPECT_EQ(labels.to_vector<int>()[0], 5);
  EXPECT_EQ(images.dtype(), kUInt8);
  const uint8_t* first = images.data<uint8_t>();
  double sum = 0;
  for (int i = 0; i < 28 * 28; ++i) sum += first[i];
  EXPECT_EQ(sum, 27525);
  std::vector<int> per_digit(10);
  for (int label : labels.to_vector<int>()) ++per_digit.at(static_cast<size_t>(label));
  EXPECT_EQ(per_digit, (std::vector<int>{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949}));
  const Tree test = datasets::mnist::load_data(*dir, datasets::Split::kTest);
  EXPECT_EQ(test[0].tensor().shape(), Shape({10000, 28, 28}));
}

TEST(IdxRealDataTest, FashionMnistFromTheDebianPackage) {
  if (!std::filesystem::is_directory(datasets::fashion_mnist::kDebianDir)) {
    GTEST_SKIP() << "Fashion-MNIST not installed in " << datasets::fashion_mnist::kDebianDir
                 << " (Debian package dataset-fashion-mnist)";
  }
  const Tree test = datasets::fashion_mnist::load_data(datasets::fashion_mnist::kDebianDir, datasets::Split::kTest);
  EXPECT_EQ(test[0].tensor().shape(), Shape({10000, 28, 28}));
  std::vector<int> per_class(10);
  for (int label : test[1].tensor().to_vector<int>()) ++per_class.at(static_cast<size_t>(label));
  EXPECT_EQ(per_class, std::vector<int>(10, 1000));
}

}  // namespace
}  // namespace chorus::data
