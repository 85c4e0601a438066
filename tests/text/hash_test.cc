#include "chorus/text/hash.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/testing/test_names.h"

namespace chorus::text {
namespace {

using namespace testing::test_names;

// The bytes 0, 1, ..., n - 1: the messages of SipHash's reference vectors.
std::string counting_bytes(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>(i));
  return out;
}

TEST(HashTest, SipHashMatchesTheReferenceVectors) {
  // Aumasson and Bernstein's vectors (SipHash reference `vectors.h`, vectors_sip64): key
  // bytes 00..0f, i.e. k0 = 0x0706050403020100 and k1 = 0x0f0e0d0c0b0a0908 read
  // little-endian; the 8 output bytes read little-endian.
  const SipHashKey key = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
  EXPECT_EQ(siphash64(key, counting_bytes(0)), 0x726fdb47dd0e0e31ULL);
  EXPECT_EQ(siphash64(key, counting_bytes(1)), 0x74f839c593dc67fdULL);
  EXPECT_EQ(siphash64(key, counting_bytes(2)), 0x0d6c8009d9a94f5aULL);
  EXPECT_EQ(siphash64(key, counting_bytes(7)), 0xab0200f58b01d137ULL);
  EXPECT_EQ(siphash64(key, counting_bytes(8)), 0x93f5f5799a932462ULL);
  EXPECT_EQ(siphash64(key, counting_bytes(15)), 0xa129ca6149be45e5ULL);  // the paper's Appendix A example
}

TEST(HashTest, BucketsMatchTensorFlowsDocumentedExamples) {
  // tf.strings.to_hash_bucket_fast(["Hello", "TensorFlow", "2.x"], 3) -> [0, 2, 2].
  const Tensor fast = to_hash_bucket_fast(Tensor::from_strings({"Hello", "TensorFlow", "2.x"}), 3);
  EXPECT_EQ(fast.dtype(), kInt64);
  EXPECT_EQ(fast.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 2}));
  // tf.strings.to_hash_bucket_strong(["Hello", "TF"], 3, [1, 2]) -> [2, 0].
  const Tensor strong = to_hash_bucket_strong(Tensor::from_strings({"Hello", "TF"}), 3, {1, 2});
  EXPECT_EQ(strong.to_vector<int64_t>(), (std::vector<int64_t>{2, 0}));
}

TEST(HashTest, FingerprintIsAFunctionOfTheBytesAlone) {
  EXPECT_EQ(fingerprint64("abc"), fingerprint64(std::string("abc")));
  EXPECT_NE(fingerprint64("abc"), fingerprint64("abd"));
  EXPECT_NE(fingerprint64(std::string("a\0b", 3)), fingerprint64("a"));  // embedded NUL bytes count
}

TEST(HashTest, Errors) {
  EXPECT_THAT([] { to_hash_bucket_fast(Tensor::from_strings({"a"}), 0); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "strings.to_hash_bucket_fast: expected num_buckets > 0. Received: num_buckets=0")));
  EXPECT_THAT([] { to_hash_bucket_strong(Tensor::empty({2}, kInt64), 3, {1, 2}); },
              ThrowsMessage<DTypeError>(HasSubstr("strings.to_hash_bucket_strong: expected a string tensor, got dtype "
                                                  "int64")));
}

}  // namespace
}  // namespace chorus::text
