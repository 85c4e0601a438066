#include "chorus/io/crc32c.h"

#include <random>
#include <string>

#include <gtest/gtest.h>

namespace chorus::io::crc32c {
namespace {

std::string ascending(int n) {
  std::string s(n, '\0');
  for (int i = 0; i < n; ++i) s[i] = static_cast<char>(i);
  return s;
}

// RFC 3720, Appendix B.4 (CRC examples), and the classic check value "123456789".
struct Vector {
  const char* name;
  std::string data;
  uint32_t crc;
};
std::vector<Vector> rfc3720_vectors() {
  std::string descending(32, '\0');
  for (int i = 0; i < 32; ++i) descending[i] = static_cast<char>(31 - i);
  return {{"32 zeros", std::string(32, '\0'), 0x8a9136aau},
          {"32 x 0xff", std::string(32, '\xff'), 0x62a8ab43u},
          {"0..31", ascending(32), 0x46dd794eu},
          {"31..0", descending, 0x113fdb5cu},
          {"123456789", "123456789", 0xe3069283u},
          {"empty", "", 0u}};
}

TEST(Crc32cTest, PortableMatchesRfc3720Vectors) {
  for (const Vector& v : rfc3720_vectors()) EXPECT_EQ(extend_portable(0, v.data), v.crc) << v.name;
}

TEST(Crc32cTest, Sse42MatchesRfc3720Vectors) {
  if (!has_sse42()) GTEST_SKIP() << "this CPU has no SSE4.2 crc32 instruction";
  for (const Vector& v : rfc3720_vectors()) EXPECT_EQ(extend_sse42(0, v.data), v.crc) << v.name;
}

TEST(Crc32cTest, DispatchMatchesRfc3720Vectors) {
  for (const Vector& v : rfc3720_vectors()) EXPECT_EQ(value(v.data), v.crc) << v.name;
}

// Random lengths cover every tail length of the 8-byte loop and unaligned starts.
TEST(Crc32cTest, Sse42AndPortableAgreeOnRandomData) {
  if (!has_sse42()) GTEST_SKIP() << "this CPU has no SSE4.2 crc32 instruction";
  std::mt19937_64 gen(20);
  std::string buffer(4096 + 8, '\0');
  for (char& c : buffer) c = static_cast<char>(gen());
  for (int trial = 0; trial < 500; ++trial) {
    const size_t offset = gen() % 8, length = gen() % 4096;
    const std::string_view data(buffer.data() + offset, length);
    const auto seed = static_cast<uint32_t>(gen());
    ASSERT_EQ(extend_sse42(seed, data), extend_portable(seed, data)) << "offset " << offset << " length " << length;
  }
}

TEST(Crc32cTest, ExtendContinuesACrc) {
  const std::string data = ascending(100);
  for (size_t split : {0, 1, 7, 8, 9, 50, 100}) {
    const std::string_view all(data), head = all.substr(0, split), tail = all.substr(split);
    EXPECT_EQ(extend(value(head), tail), value(all)) << split;
    EXPECT_EQ(extend_portable(extend_portable(0, head), tail), value(all)) << split;
  }
}

// TensorFlow's crc32c_test: masking changes the value, and unmask inverts it.
TEST(Crc32cTest, MaskRoundTrips) {
  const uint32_t crc = value("foo");
  EXPECT_NE(crc, mask(crc));
  EXPECT_NE(crc, mask(mask(crc)));
  EXPECT_EQ(crc, unmask(mask(crc)));
  EXPECT_EQ(crc, unmask(unmask(mask(mask(crc)))));
  EXPECT_EQ(mask(0), kMaskDelta);
}

}  // namespace
}  // namespace chorus::io::crc32c
