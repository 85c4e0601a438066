#include "chorus/io/tfrecord_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "chorus/io/atomic_file.h"
#include "chorus/io/crc32c.h"
#include "tests/testing/event_records.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"

namespace chorus::io {
namespace {

using namespace testing::test_names;

class TfRecordWriterTest : public testing::TempDirTest {
 protected:
  std::filesystem::path path() const { return dir_ / "records.tfrecord"; }
};

// The frame byte by byte: uint64 length, masked CRC of those 8 bytes, the data, masked
// CRC of the data, all little-endian.
TEST_F(TfRecordWriterTest, FramesEachRecord) {
  const std::string big(1000, 'x');
  {
    TFRecordWriter writer(path());
    writer.write("");
    writer.write("abc");
    writer.write(big);
    writer.close();
  }
  const std::string bytes = read_file(path());
  ASSERT_EQ(bytes.size(), TFRecordWriter::framed_size(0) + TFRecordWriter::framed_size(3) + TFRecordWriter::framed_size(1000));

  // The empty record: 8 zero bytes, their masked CRC, and mask(crc32c("")) = mask(0).
  EXPECT_EQ(bytes.substr(0, 8), std::string(8, '\0'));
  EXPECT_EQ(testing::read_le(bytes, 8, 4), crc32c::mask(crc32c::extend_portable(0, std::string(8, '\0'))));
  EXPECT_EQ(bytes.substr(12, 4), std::string("\xd8\xea\x82\xa2", 4));  // 0xa282ead8 little-endian

  size_t at = 16;  // "abc"
  EXPECT_EQ(bytes.substr(at, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(testing::read_le(bytes, at + 8, 4), crc32c::mask(crc32c::extend_portable(0, bytes.substr(at, 8))));
  EXPECT_EQ(bytes.substr(at + 12, 3), "abc");
  EXPECT_EQ(testing::read_le(bytes, at + 15, 4), crc32c::mask(crc32c::extend_portable(0, "abc")));

  at += TFRecordWriter::framed_size(3);  // 1000 bytes: the length 0x3e8 spans two bytes
  EXPECT_EQ(bytes.substr(at, 8), std::string("\xe8\x03\0\0\0\0\0\0", 8));
  EXPECT_EQ(bytes.substr(at + 12, 1000), big);
  EXPECT_EQ(testing::read_le(bytes, at + 1012, 4), crc32c::mask(crc32c::extend_portable(0, big)));

  EXPECT_EQ(testing::read_tfrecords(path()), (std::vector<std::string>{"", "abc", big}));
}

// Records reach the file only on flush (or a full buffer), whole: what a crash leaves is
// a sequence of complete records.
TEST_F(TfRecordWriterTest, FlushWritesWholeRecords) {
  TFRecordWriter writer(path());
  writer.write("one");
  EXPECT_EQ(read_file(path()), "");
  writer.flush();
  writer.write("two");
  EXPECT_EQ(testing::read_tfrecords(path()), (std::vector<std::string>{"one"}));
  writer.flush();
  EXPECT_EQ(testing::read_tfrecords(path()), (std::vector<std::string>{"one", "two"}));
  // Past the buffer size the writer flushes by itself.
  const std::string big(TFRecordWriter::kBufferBytes, 'z');
  writer.write(big);
  EXPECT_EQ(testing::read_tfrecords(path()).size(), 3u);
}

TEST_F(TfRecordWriterTest, TheDestructorClosesTheFile) {
  { TFRecordWriter(path()).write("kept"); }
  EXPECT_EQ(testing::read_tfrecords(path()), (std::vector<std::string>{"kept"}));
}

TEST_F(TfRecordWriterTest, ReaderCatchesACorruptedByte) {
  { TFRecordWriter(path()).write("payload"); }
  std::string bytes = read_file(path());
  bytes[14] ^= 1;  // inside the data
  write("records.tfrecord", bytes);
  EXPECT_THROW(testing::read_tfrecords(path()), std::runtime_error);
}

TEST_F(TfRecordWriterTest, ErrorsNameTheFile) {
  { TFRecordWriter writer(path()); }
  EXPECT_THAT([&] { TFRecordWriter again(path()); },
              ThrowsMessage<IOError>(HasSubstr("TFRecordWriter: cannot create " + path().string() + ": File exists")));
  EXPECT_THAT([&] { TFRecordWriter missing(dir_ / "no" / "such" / "dir"); },
              ThrowsMessage<IOError>(HasSubstr("No such file or directory")));
  TFRecordWriter writer(dir_ / "closed");
  writer.close();
  writer.close();  // idempotent
  EXPECT_THAT([&] { writer.write("x"); }, ThrowsMessage<IOError>(HasSubstr("closed is closed")));
}

}  // namespace
}  // namespace chorus::io
