#include "chorus/io/safetensors.h"

#include <bit>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chorus/core/creation.h"
#include "chorus/io/atomic_file.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::io {
namespace {

namespace fs = std::filesystem;
using namespace testing::test_names;

// Same dtype, shape and bytes.
::testing::AssertionResult bit_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) return ::testing::AssertionFailure() << "dtypes differ";
  if (a.shape() != b.shape()) {
    return ::testing::AssertionFailure() << "shapes " << a.shape().to_string() << " vs " << b.shape().to_string();
  }
  if (a.nbytes() > 0 && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) != 0) {
    return ::testing::AssertionFailure() << "bytes differ";
  }
  return ::testing::AssertionSuccess();
}

// A safetensors file built by hand: the u64 length, `header` padded with spaces, `data`.
std::string file_bytes(std::string header, const std::string& data = "") {
  header.resize((header.size() + 7) / 8 * 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(uint64_t{header.size()} >> (8 * i));
  return out + header + data;
}

// An independent reader of the 8-byte little-endian length.
uint64_t read_u64_le(const std::string& bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  return n;
}

Tensor every_bfloat16() {
  Tensor t = Tensor::empty({256, 256}, kBFloat16);
  for (int i = 0; i < 65536; ++i) t.data<bfloat16>()[i] = bfloat16::from_bits(static_cast<uint16_t>(i));
  return t;
}

Tensor bools(std::initializer_list<bool> values, const Shape& shape) {
  Tensor t = Tensor::empty(shape, kBool);
  std::copy(values.begin(), values.end(), t.data<bool>());
  return t;
}

// One of each dtype, including special floats, integer extremes, rank 0 and empty.
NamedTensors every_kind_of_tensor() {
  const float nan_with_payload = std::bit_cast<float>(0x7fc01234u);
  return {
      {"dense/kernel", chorus::testing::random_tensor({7, 13}, 1)},
      {"specials",
       from_values<float>({nan_with_payload, -0.0f, std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                           std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(), 1.5f})},
      {"bf16/all_bit_patterns", every_bfloat16()},
      {"bf16/odd", chorus::testing::random_tensor({1023}, 2, -3, 3, kBFloat16)},
      {"int32",
       from_values<int32_t>({std::numeric_limits<int32_t>::min(), -1, 0, 1, 12345, std::numeric_limits<int32_t>::max()},
                            {2, 3})},
      {"int64", from_values<int64_t>(
                    {std::numeric_limits<int64_t>::min(), -7, int64_t{1} << 40, std::numeric_limits<int64_t>::max()},
                    {2, 1, 2})},
      {"mask", bools({true, false, false, true, true, false, true}, {7})},
      {"scalar", scalar(3.25)},
      {"step", scalar(42, kInt64)},
      {"empty_f32", Tensor::empty({0, 5}, kFloat32)},
      {"empty_i64", Tensor::empty({3, 0}, kInt64)},
      {"empty_bool", Tensor::empty({0}, kBool)},
      {"pixels_u8", from_values<uint8_t>({0, 1, 127, 128, 254, 255}, {2, 3})},
  };
}

class SafetensorsTest : public chorus::testing::TempDirTest {
 protected:
  fs::path path(const std::string& name = "model.weights.safetensors") const { return dir_ / name; }

  // Writes `bytes` to bad.safetensors and returns the message of the IOError that loading
  // it throws ("no error" if none).
  std::string load_error(const std::string& bytes) const {
    const std::string file = write("bad.safetensors", bytes);
    try {
      load_safetensors(file);
    } catch (const IOError& e) {
      return e.what();
    }
    return "no error";
  }
  // `message` as an error about bad.safetensors.
  std::string named(const std::string& message) const { return path("bad.safetensors").string() + ": " + message; }
};

TEST_F(SafetensorsTest, RoundTripsEveryDtypeBitExactInOrder) {
  const NamedTensors tensors = every_kind_of_tensor();
  save_safetensors(path(), tensors);
  const SafetensorsContents loaded = load_safetensors(path());
  ASSERT_EQ(loaded.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(loaded.tensors[i].first, tensors[i].first);
    EXPECT_TRUE(bit_equal(loaded.tensors[i].second, tensors[i].second)) << tensors[i].first;
    EXPECT_FALSE(loaded.tensors[i].second.shares_storage(tensors[i].second));
  }
  EXPECT_TRUE(loaded.metadata.empty());
}

TEST_F(SafetensorsTest, RoundTripsViews) {
  const Tensor base = chorus::testing::random_tensor({10, 3}, 3);
  const NamedTensors tensors = {{"rows", base.first_axis_slice(7, 9)}, {"flat", base.view({30})}};
  save_safetensors(path(), tensors);
  const auto loaded = load_safetensors(path());
  ASSERT_EQ(loaded.tensors.size(), 2u);
  EXPECT_TRUE(bit_equal(loaded.tensors[0].second, tensors[0].second));
  EXPECT_TRUE(bit_equal(loaded.tensors[1].second, tensors[1].second));
}

TEST_F(SafetensorsTest, RoundTripsMetadata) {
  const std::map<std::string, std::string> metadata = {
      {"format", "chorus"}, {"unicode", "h\u00e9llo \u2713"}, {"empty", ""}, {"escapes", "a\"b\\c\n\t{}"}};
  save_safetensors(path(), {{"w", scalar(1.0)}}, metadata);
  EXPECT_EQ(load_safetensors(path()).metadata, metadata);
  save_safetensors(path(), {}, metadata);  // metadata alone, no tensors
  const auto loaded = load_safetensors(path());
  EXPECT_EQ(loaded.metadata, metadata);
  EXPECT_TRUE(loaded.tensors.empty());
}

TEST_F(SafetensorsTest, HeaderIsReadableByAnIndependentReader) {
  const NamedTensors tensors = every_kind_of_tensor();
  save_safetensors(path(), tensors, {{"format", "pt"}});
  const std::string bytes = read_file(path());

  const uint64_t n = read_u64_le(bytes);
  EXPECT_EQ(n % 8, 0u);
  ASSERT_LE(8 + n, bytes.size());
  const std::string header_text = bytes.substr(8, n);
  EXPECT_EQ(header_text[0], '{');
  const size_t json_end = header_text.rfind('}') + 1;
  EXPECT_EQ(header_text.substr(json_end), std::string(n - json_end, ' '));  // padding is spaces
  const nlohmann::json header = nlohmann::json::parse(header_text);
  EXPECT_EQ(header["__metadata__"], nlohmann::json({{"format", "pt"}}));
  ASSERT_EQ(header.size(), tensors.size() + 1);

  const std::string data = bytes.substr(8 + n);
  uint64_t expected_begin = 0;  // tensors laid out contiguously in the order written
  for (const auto& [name, tensor] : tensors) {
    SCOPED_TRACE(name);
    const nlohmann::json& entry = header.at(name);
    const char* dtype = tensor.dtype() == kFloat32    ? "F32"
                        : tensor.dtype() == kBFloat16 ? "BF16"
                        : tensor.dtype() == kInt32    ? "I32"
                        : tensor.dtype() == kInt64    ? "I64"
                        : tensor.dtype() == kUInt8    ? "U8"
                                                      : "BOOL";
    EXPECT_EQ(entry["dtype"], dtype);
    EXPECT_EQ(entry["shape"].get<std::vector<int64_t>>(), tensor.shape().to_vector());
    const auto offsets = entry["data_offsets"].get<std::vector<uint64_t>>();
    ASSERT_EQ(offsets.size(), 2u);
    EXPECT_EQ(offsets[0], expected_begin);
    EXPECT_EQ(offsets[1] - offsets[0], tensor.nbytes());
    EXPECT_EQ(data.substr(offsets[0], tensor.nbytes()),
              std::string(static_cast<const char*>(tensor.raw_data()), tensor.nbytes()));
    expected_begin = offsets[1];
  }
  EXPECT_EQ(expected_begin, data.size());
}

// Byte strings produced by the reference implementation (huggingface/safetensors,
// safetensors/src/tensor.rs tests test_serialization and test_empty).
TEST_F(SafetensorsTest, WritesTheSameBytesAsTheReferenceImplementation) {
  const std::string one_tensor =
      file_bytes(R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})",
                 std::string("\0\0\0\0\0\0\x80\x3f\0\0\0\x40\0\0\x40\x40\0\0\x80\x40\0\0\xa0\x40", 24));
  ASSERT_EQ(read_u64_le(one_tensor), 64u);
  save_safetensors(path(), {{"attn.0", from_values<float>({0, 1, 2, 3, 4, 5}, {1, 2, 3})}});
  EXPECT_EQ(read_file(path()), one_tensor);

  save_safetensors(path(), {});
  EXPECT_EQ(read_file(path()), std::string("\x08\0\0\0\0\0\0\0{}      ", 16));

  save_safetensors(path(), {}, {{"framework", "pt"}});
  EXPECT_EQ(read_file(path()),
            std::string("\x28\0\0\0\0\0\0\0", 8) + R"({"__metadata__":{"framework":"pt"}})" + "     ");
}

TEST_F(SafetensorsTest, ReadsTensorsInOffsetOrderWhateverTheKeyOrder) {
  // Layout as the reference writer makes it (by dtype alignment, then name): "z" first.
  const std::string bytes = file_bytes(
      R"({"a":{"dtype":"BOOL","shape":[2],"data_offsets":[8,10]},)"
      R"("z":{"dtype":"I64","shape":[],"data_offsets":[0,8]}, "e":{"dtype":"F32","shape":[0],"data_offsets":[8,8]}})",
      std::string("\x07\0\0\0\0\0\0\0\x01\x00", 10));
  write("ref.safetensors", bytes);
  const auto loaded = load_safetensors(path("ref.safetensors"));
  ASSERT_EQ(loaded.tensors.size(), 3u);
  EXPECT_EQ(loaded.tensors[0].first, "z");
  EXPECT_EQ(loaded.tensors[0].second.item<int64_t>(), 7);
  EXPECT_EQ(loaded.tensors[1].first, "e");
  EXPECT_EQ(loaded.tensors[1].second.shape(), Shape({0}));
  EXPECT_EQ(loaded.tensors[2].first, "a");
  EXPECT_EQ(loaded.tensors[2].second.to_vector<int>(), (std::vector<int>{1, 0}));
}

// ---- writing errors ----

TEST_F(SafetensorsTest, SaveRejectsBadNamesAndTensors) {
  const Tensor w = scalar(1.0);
  EXPECT_THAT([&] { save_safetensors(path(), {{"w", w}, {"b", w}, {"w", w}}); },
              ThrowsMessage<ValueError>(HasSubstr("model.weights.safetensors: duplicate tensor name 'w'")));
  EXPECT_THAT([&] { save_safetensors(path(), {{"__metadata__", w}}); },
              ThrowsMessage<ValueError>(HasSubstr("'__metadata__' is reserved, not a tensor name")));
  EXPECT_THAT([&] { save_safetensors(path(), {{"w", Tensor()}}); },
              ThrowsMessage<ValueError>(HasSubstr("tensor 'w' is undefined")));
  EXPECT_THAT([&] { save_safetensors(path(), {{"bad\xff", w}}); },
              ThrowsMessage<ValueError>(HasSubstr("tensor names and metadata must be valid UTF-8")));
  EXPECT_FALSE(fs::exists(path()));
}

TEST_F(SafetensorsTest, SaveFailureNamesTheFileAndKeepsTheOldOne) {
  save_safetensors(path(), {{"w", scalar(1.0)}});
  const fs::path unwritable = dir_ / "missing_dir" / "x.safetensors";
  EXPECT_THAT([&] { save_safetensors(unwritable, {{"w", scalar(2.0)}}); },
              ThrowsMessage<IOError>(AllOf(HasSubstr(unwritable.string()), HasSubstr("No such file or directory"))));
  fs::create_directory(path("dir.safetensors"));
  write("dir.safetensors/keep", "x");
  EXPECT_THAT([&] { save_safetensors(path("dir.safetensors"), {{"w", scalar(2.0)}}); },
              ThrowsMessage<IOError>(HasSubstr("dir.safetensors: cannot rename")));
  EXPECT_EQ(load_safetensors(path()).tensors[0].second.item<float>(), 1.0f);
}

// ---- reading corrupt files ----

TEST_F(SafetensorsTest, TruncatedFiles) {
  save_safetensors(path(), {{"w", chorus::testing::random_tensor({4, 4}, 5)}});
  const std::string good = read_file(path());
  const uint64_t n = read_u64_le(good);
  EXPECT_THAT(load_error(good.substr(0, 5)),
              HasSubstr(named("the file has 5 bytes, too few for the 8-byte header length")));
  EXPECT_THAT(load_error(""), HasSubstr(named("the file has 0 bytes")));
  EXPECT_THAT(load_error(good.substr(0, 8 + n - 3)),
              HasSubstr(named(fmt::format("the header length is {} bytes but only {} bytes follow it", n, n - 3))));
  EXPECT_THAT(
      load_error(good.substr(0, good.size() - 4)),
      HasSubstr(named("tensor w: data offsets [0, 64) lie outside the data buffer of 60 bytes (truncated file?)")));
}

TEST_F(SafetensorsTest, HeaderLengthIsCheckedBeforeAnyAllocation) {
  std::string bytes = file_bytes("{}");
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(0xff);  // 2^64 - 1
  EXPECT_THAT(load_error(bytes),
              HasSubstr(named("the header length is 18446744073709551615 bytes but only 8 bytes follow it")));

  // A sparse file larger than the 100 MB header limit: the length fits the file but not the limit.
  const uint64_t n = 100'000'001;
  std::string length(8, '\0');
  for (int i = 0; i < 8; ++i) length[i] = static_cast<char>(n >> (8 * i));
  const std::string file = write("huge.safetensors", length + "{}");
  fs::resize_file(file, 8 + n);
  EXPECT_THAT([&] { load_safetensors(file); },
              ThrowsMessage<IOError>(
                  HasSubstr(file + ": the header length 100000001 exceeds the limit of 100000000 bytes")));
}

TEST_F(SafetensorsTest, HeaderThatIsNotJson) {
  EXPECT_THAT(load_error(file_bytes("[1, 2]")),
              HasSubstr(named("the header does not start with '{' (not a safetensors file?)")));
  EXPECT_THAT(load_error(file_bytes(R"({"w": {"dtype": "F32",)")),
              HasSubstr(named("the header is not valid JSON: parse error at line 1")));
  EXPECT_THAT(load_error(file_bytes(R"({"w": 1} trailing)")), HasSubstr(named("the header is not valid JSON")));
  EXPECT_THAT(load_error(file_bytes("{\"w\xff\": 1}")), HasSubstr(named("the header is not valid JSON")));
  EXPECT_THAT(load_error(file_bytes(R"({"w":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
                                    R"("w":{"dtype":"F32","shape":[],"data_offsets":[4,8]}})",
                                    std::string(8, '\0'))),
              HasSubstr(named("the header has the key \"w\" twice")));
}

// Found by fuzz/safetensors_fuzzer: json reports a number too large for a double as
// out_of_range, not parse_error, and it escaped the reader.
TEST_F(SafetensorsTest, HeaderNumberTooLargeForADoubleIsAnIOErrorNamingTheField) {
  EXPECT_THAT(load_error(file_bytes(R"({"w":{"dtype":"F32","shape":[1e999],"data_offsets":[0,4]}})", std::string(4, '\0'))),
              HasSubstr(named("the header is not valid JSON: number overflow parsing '1e999' (in \"w\".\"shape\")")));
  EXPECT_THAT(load_error(file_bytes(R"({"__metadata__":{"a":"b"},"n":-1e400})")),
              HasSubstr(named("the header is not valid JSON: number overflow parsing '-1e400' (in \"n\")")));
}

TEST_F(SafetensorsTest, BadEntries) {
  const std::string four(4, '\0');
  EXPECT_THAT(load_error(file_bytes(R"({"w": [0, 4]})", four)),
              HasSubstr(named("tensor w: expected an object with dtype, shape and data_offsets, got [0,4]")));
  EXPECT_THAT(load_error(file_bytes(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", four)),
              HasSubstr(named("tensor w: missing \"shape\"")));
  EXPECT_THAT(load_error(file_bytes(R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", four)),
              HasSubstr(named("tensor w: dtype \"F16\" is not supported (expected one of F32, BF16, I32, I64, BOOL, U8)")));
  EXPECT_THAT(load_error(file_bytes(R"({"w":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", four)),
              HasSubstr(named("tensor w: dtype 7 is not supported")));
  EXPECT_THAT(load_error(file_bytes(R"({"w":{"dtype":"F32","shape":[-1,2],"data_offsets":[0,4]}})", four)),
              HasSubstr(named("tensor w: shape [-1,2] is not a list of non-negative integers")));
  EXPECT_THAT(load_error(file_bytes(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", four)),
              HasSubstr(named("tensor w: shape [1.5] is not a list of non-negative integers")));
  EXPECT_THAT(load_error(file_bytes(R"({"w":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})", four)),
              HasSubstr(named("tensor w: shape [1,1,1,1,1,1,1,1,1] has rank 9, more than chorus's maximum 8")));
  EXPECT_THAT(
      load_error(file_bytes(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", four)),
      HasSubstr(named("tensor w: shape [4294967296,4294967296] of F32 has more bytes than fit in 64 bits")));
  EXPECT_THAT(load_error(file_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", four)),
              HasSubstr(named("tensor w: data_offsets [0] is not a pair of non-negative integers")));
  EXPECT_THAT(load_error(file_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", four)),
              HasSubstr(named("tensor w: data offsets [4, 0) do not match shape (1,) of F32 (4 bytes)")));
}

TEST_F(SafetensorsTest, OffsetsThatDoNotMatchTheShape) {
  const std::string bytes = file_bytes(R"({"dense/kernel":{"dtype":"F32","shape":[784,256],"data_offsets":[0,1000]}})",
                                       std::string(1000, '\0'));
  const std::string file = write("model.weights.safetensors", bytes);
  EXPECT_THAT([&] { load_safetensors(file); },
              ThrowsMessage<IOError>(HasSubstr("model.weights.safetensors: tensor dense/kernel: data offsets [0, 1000) "
                                               "do not match shape (784, 256) of F32 (802816 bytes)")));
}

TEST_F(SafetensorsTest, OffsetsThatOverlapLeaveHolesOrLeaveTheBuffer) {
  const std::string two_f32 = R"("dtype":"F32","shape":[2])";
  EXPECT_THAT(load_error(file_bytes(
                  R"({"a":{)" + two_f32 + R"(,"data_offsets":[0,8]},"b":{)" + two_f32 + R"(,"data_offsets":[4,12]}})",
                  std::string(12, '\0'))),
              HasSubstr(named("tensor b: data offsets [4, 12) overlap tensor a at [0, 8)")));
  EXPECT_THAT(load_error(file_bytes(
                  R"({"a":{)" + two_f32 + R"(,"data_offsets":[0,8]},"b":{)" + two_f32 + R"(,"data_offsets":[0,8]}})",
                  std::string(8, '\0'))),
              HasSubstr(named("tensor b: data offsets [0, 8) overlap tensor a at [0, 8)")));
  EXPECT_THAT(load_error(file_bytes(
                  R"({"a":{)" + two_f32 + R"(,"data_offsets":[0,8]},"b":{)" + two_f32 + R"(,"data_offsets":[12,20]}})",
                  std::string(20, '\0'))),
              HasSubstr(named("tensor b: data offsets [12, 20) leave bytes [8, 12) of the data buffer unused")));
  EXPECT_THAT(load_error(file_bytes(R"({"a":{)" + two_f32 + R"(,"data_offsets":[4,12]}})", std::string(12, '\0'))),
              HasSubstr(named("tensor a: data offsets [4, 12) leave bytes [0, 4) of the data buffer unused")));
  EXPECT_THAT(load_error(file_bytes(R"({"a":{)" + two_f32 + R"(,"data_offsets":[0,8]}})", std::string(4, '\0'))),
              HasSubstr(named("tensor a: data offsets [0, 8) lie outside the data buffer of 4 bytes")));
  EXPECT_THAT(load_error(file_bytes(R"({"a":{)" + two_f32 + R"(,"data_offsets":[0,8]}})", std::string(12, '\0'))),
              HasSubstr(named("the data buffer has 12 bytes but the tensors cover only [0, 8)")));
  EXPECT_THAT(load_error(file_bytes("{}", "x")),
              HasSubstr(named("the data buffer has 1 bytes but the tensors cover only [0, 0)")));
}

TEST_F(SafetensorsTest, BadMetadataAndBoolBytes) {
  EXPECT_THAT(load_error(file_bytes(R"({"__metadata__": ["x"]})")),
              HasSubstr(named("\"__metadata__\" must be an object of strings, got [\"x\"]")));
  EXPECT_THAT(load_error(file_bytes(R"({"__metadata__": {"epoch": 3}})")),
              HasSubstr(named("\"__metadata__\" entry \"epoch\" must be a string, got 3")));
  EXPECT_THAT(load_error(file_bytes(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                                    std::string("\x01\x02\x00", 3))),
              HasSubstr(named("tensor m: BOOL element 1 has byte value 2, expected 0 or 1")));
}

TEST_F(SafetensorsTest, MissingFileOrDirectory) {
  EXPECT_THAT([&] { load_safetensors(path("missing.safetensors")); },
              ThrowsMessage<IOError>(
                  HasSubstr(path("missing.safetensors").string() + ": cannot open: No such file or directory")));
  EXPECT_THAT([&] { load_safetensors(dir_); }, ThrowsMessage<IOError>(HasSubstr(dir() + ": not a regular file")));
}

}  // namespace
}  // namespace chorus::io
