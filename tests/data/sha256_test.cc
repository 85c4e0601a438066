// SHA-256 against the NIST FIPS 180-4 example vectors, padding boundaries (digests from
// Python's hashlib), streaming in arbitrary chunks, and files.
#include "chorus/data/sha256.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "tests/testing/test_names.h"

namespace chorus::data {
namespace {

using namespace testing::test_names;

TEST(Sha256Test, NistVectors) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // 448 bits: the padding's length field no longer fits in the message's only block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmn"
                       "opqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(sha256_hex(std::string(1'000'000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

std::string pattern(size_t n) {
  std::string bytes(n, '\0');
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>((i * 7 + 3) % 256);
  return bytes;
}

TEST(Sha256Test, PaddingBoundaries) {
  const std::pair<size_t, const char*> cases[] = {
      {55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
      {56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
      {63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
      {64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
      {65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"},
      {119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
      {120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"},
      {1000, "1e9bc38cbf860b9ec31918b065f9b52476c549a782e0e7990bed8ce3868d2371"},
  };
  for (const auto& [size, digest] : cases) EXPECT_EQ(sha256_hex(pattern(size)), digest) << "length " << size;
}

TEST(Sha256Test, StreamingInChunksMatchesOneShot) {
  const std::string message = pattern(1023);
  const std::string expected = sha256_hex(message);
  for (size_t chunk : {1, 3, 63, 64, 65, 200}) {
    Sha256 hasher;
    for (size_t i = 0; i < message.size(); i += chunk) hasher.update(std::string_view(message).substr(i, chunk));
    EXPECT_EQ(hasher.finish_hex(), expected) << "chunk " << chunk;
  }
}

TEST(Sha256Test, FinishStartsANewMessage) {
  Sha256 hasher;
  hasher.update("junk");
  (void)hasher.finish();
  hasher.update("abc");
  EXPECT_EQ(hasher.finish_hex(), sha256_hex("abc"));
}

TEST(Sha256Test, ResetDiscardsWhatWasFed) {
  Sha256 hasher;
  hasher.update("junk");
  hasher.reset();
  hasher.update("abc");
  EXPECT_EQ(hasher.finish_hex(), sha256_hex("abc"));
}

TEST(Sha256Test, AMovedHasherKeepsItsMessage) {
  Sha256 first;
  first.update("ab");
  Sha256 second = std::move(first);
  second.update("c");
  EXPECT_EQ(second.finish_hex(), sha256_hex("abc"));
  first = Sha256();  // a moved-from hasher can be assigned a new one and used again
  first.update("abc");
  EXPECT_EQ(first.finish_hex(), sha256_hex("abc"));
}

TEST(Sha256Test, FileDigestMatchesBytes) {
  const auto path = std::filesystem::temp_directory_path() / "chorus_sha256_test.bin";
  const std::string bytes = pattern(3 << 20);  // spans several read blocks
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_EQ(sha256_file_hex(path.string()), sha256_hex(bytes));
  std::filesystem::remove(path);
}

TEST(Sha256Test, MissingFileIsAnIOErrorNamingIt) {
  EXPECT_THAT([] { (void)sha256_file_hex("/nonexistent/chorus.bin"); },
              ThrowsMessage<IOError>(HasSubstr("/nonexistent/chorus.bin: cannot open for reading")));
}

}  // namespace
}  // namespace chorus::data
