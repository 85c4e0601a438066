#include "chorus/backend/cpu/random_kernels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "chorus/core/random.h"

namespace chorus {
namespace {

using backend::cpu::Isa;

// Element j's mask from chorus::philox4x32, one block per element.
float reference_mask(uint64_t key, uint64_t j, uint32_t threshold, float keep_scale) {
  const uint32_t word = philox4x32(key, j / 4)[j % 4];
  return (word >> 8) >= threshold ? keep_scale : 0.f;
}

TEST(RandomKernelsTest, DropoutMasksAreThePhiloxBitsOnEveryInstructionSet) {
  const uint64_t key = 0x0123456789abcdefull;
  const uint32_t threshold = 1u << 23;  // rate 0.5
  // Offsets inside a block, and a counter whose low 32 bits wrap within the mask.
  for (const int64_t first : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{4 * 0xfffffffdll + 2}}) {
    for (const int64_t n : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{37}, int64_t{70001}}) {
      std::vector<float> expected(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        expected[static_cast<size_t>(i)] = reference_mask(key, static_cast<uint64_t>(first + i), threshold, 2.f);
      }
      for (int isa = 0; isa <= static_cast<int>(backend::cpu::active_isa()); ++isa) {
        SCOPED_TRACE(::testing::Message() << "isa " << isa << " first " << first << " n " << n);
        std::vector<float> got(static_cast<size_t>(n), -1.f);
        std::vector<bfloat16> got_b(static_cast<size_t>(n));
        backend::cpu::dropout_mask(key, first, threshold, 2.f, got.data(), n, static_cast<Isa>(isa));
        backend::cpu::dropout_mask(key, first, threshold, 2.f, got_b.data(), n, static_cast<Isa>(isa));
        EXPECT_EQ(got, expected);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(static_cast<float>(got_b[static_cast<size_t>(i)]), expected[static_cast<size_t>(i)]);
      }
    }
  }
}

TEST(RandomKernelsTest, DropoutMaskKeepsTheShareAboveTheThreshold) {
  // threshold = ceil(0.1 * 2^24): about 90% kept, each as the keep scale.
  const int64_t n = 1 << 20;
  std::vector<float> mask(static_cast<size_t>(n));
  backend::cpu::dropout_mask(7, 0, 1677722, 1.f / 0.9f, mask.data(), n);
  int64_t kept = 0;
  for (float v : mask) {
    ASSERT_TRUE(v == 0.f || v == 1.f / 0.9f) << v;
    kept += v != 0.f;
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.9, 0.002);
}

}  // namespace
}  // namespace chorus
