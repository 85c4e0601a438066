#include "chorus/core/random.h"

#include <cmath>

#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;

// Known-answer vectors from the Random123 distribution (kat_vectors, philox4x32_10).
TEST(PhiloxTest, MatchesRandom123KnownAnswers) {
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}), (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(GeneratorTest, SameSeedSameStreamAndCounterAdvances) {
  Generator a(7), b(7);
  const auto x = uniform({5}, a).to_vector<float>();
  EXPECT_EQ(x, uniform({5}, b).to_vector<float>());
  EXPECT_EQ(a.counter(), 2u);  // 5 values = 2 Philox blocks
  EXPECT_NE(uniform({5}, a).to_vector<float>(), x);  // the next draw continues the stream
}

TEST(GeneratorTest, KeyAndCounterRestoreTheStream) {
  Generator gen(123);
  uniform({10}, gen);
  Generator restored(gen.key(), gen.counter());
  EXPECT_EQ(normal({9}, gen).to_vector<float>(), normal({9}, restored).to_vector<float>());
}

TEST(GeneratorTest, ForkedStreamsDifferAndAreReproducible) {
  Generator root(42);
  Generator g0 = root.fork(0);
  const auto r0 = uniform({8}, g0).to_vector<float>();
  Generator f0 = root.fork(0), f1 = root.fork(1);
  EXPECT_EQ(uniform({8}, f0).to_vector<float>(), r0);
  EXPECT_NE(uniform({8}, f1).to_vector<float>(), r0);
  EXPECT_NE(root.fork(0).key(), Generator(43).fork(0).key());
}

TEST(GeneratorTest, UniformRangeAndMoments) {
  Generator gen(1);
  const auto v = uniform({100000}, gen, -2, 3).to_vector<double>();
  double mean = 0;
  for (double x : v) {
    ASSERT_GE(x, -2);
    ASSERT_LT(x, 3);
    mean += x / v.size();
  }
  EXPECT_NEAR(mean, 0.5, 0.02);
}

TEST(GeneratorTest, NormalMoments) {
  Generator gen(2);
  const auto v = normal({100000}, gen, 1, 2).to_vector<double>();
  double mean = 0, sq = 0;
  for (double x : v) mean += x / v.size();
  for (double x : v) sq += (x - mean) * (x - mean) / v.size();
  EXPECT_NEAR(mean, 1, 0.03);
  EXPECT_NEAR(std::sqrt(sq), 2, 0.03);
}

TEST(GeneratorTest, TruncatedNormalStaysWithinTwoStddevs) {
  Generator gen(3);
  const auto v = truncated_normal({50000}, gen, 0, 0.05).to_vector<double>();
  double sq = 0;
  for (double x : v) {
    ASSERT_LE(std::abs(x), 0.1 + 1e-7);
    sq += x * x / v.size();
  }
  EXPECT_NEAR(std::sqrt(sq), 0.05 * 0.8796, 0.002);  // stddev of a normal truncated at 2 sigma
}

TEST(GeneratorTest, BFloat16DrawsRoundTheFloat32Stream) {
  Generator a(9), b(9);
  const auto f = uniform({6}, a).to_vector<float>();
  const auto h = uniform({6}, b, 0, 1, kBFloat16).to_vector<float>();
  for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(h[i], float(bfloat16(f[i])));
}

TEST(GeneratorTest, BadArguments) {
  Generator gen(0);
  EXPECT_THAT([&] { uniform({2}, gen, 1, 1); },
              ThrowsMessage<ValueError>(HasSubstr("uniform: expected minval < maxval. Received: minval=1, maxval=1")));
  EXPECT_THAT([&] { normal({2}, gen, 0, 1, kInt32); },
              ThrowsMessage<DTypeError>(HasSubstr("expected a floating dtype (float32 or bfloat16), got int32")));
}

}  // namespace
}  // namespace chorus
