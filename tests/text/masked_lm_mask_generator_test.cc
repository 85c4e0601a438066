// Tests for chorus/text/masked_lm_mask_generator.h: output layout, the selection count
// rule, statistics over many positions, and independence from thread splits.
#include "chorus/text/masked_lm_mask_generator.h"

#include <random>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/creation.h"
#include "chorus/core/error.h"
#include "tests/testing/test_names.h"

namespace chorus::text {
namespace {

using namespace testing::test_names;

constexpr int32_t kPad = 0, kCls = 1, kSep = 2, kMask = 3;

MaskedLMMaskGeneratorOptions options(double rate, int64_t length, double mask_rate = 0.8, double random_rate = 0.1) {
  return {.vocabulary_size = 30000,
          .mask_selection_rate = rate,
          .mask_selection_length = length,
          .mask_token_id = kMask,
          .unselectable_token_ids = {kPad, kCls, kSep},
          .mask_token_rate = mask_rate,
          .random_token_rate = random_rate,
          .seed = 42};
}

TEST(MaskedLMMaskGeneratorTest, OneRowLayout) {
  // 3 selectable ids; ceil(0.5 * 3) = 2 chosen among positions 1..3; always [MASK].
  const MaskedLMMaskGenerator generator(options(0.5, 4, /*mask_rate=*/1.0, /*random_rate=*/0.0));
  const std::vector<int32_t> ids{kCls, 50, 60, 70, kSep, kPad};
  const MaskedLMRow row = generator.mask(ids, /*epoch=*/0, /*element=*/0);
  ASSERT_EQ(row.mask_positions.size(), 4u);
  EXPECT_THAT(row.mask_weights, ElementsAre(1, 1, 0, 0));
  EXPECT_LT(row.mask_positions[0], row.mask_positions[1]);
  EXPECT_EQ(row.mask_positions[2], 0);
  EXPECT_EQ(row.mask_ids[3], 0);
  std::vector<int32_t> expected = ids;
  for (int i = 0; i < 2; ++i) {
    const int32_t p = row.mask_positions[static_cast<size_t>(i)];
    EXPECT_GE(p, 1);
    EXPECT_LE(p, 3);
    EXPECT_EQ(row.mask_ids[static_cast<size_t>(i)], ids[static_cast<size_t>(p)]);
    expected[static_cast<size_t>(p)] = kMask;
  }
  EXPECT_EQ(row.token_ids, expected);
}

TEST(MaskedLMMaskGeneratorTest, SelectionCountRule) {
  const MaskedLMMaskGenerator generator(options(0.15, 5));
  EXPECT_EQ(generator.num_to_select(20), 3);    // 0.15 * 20 = 3 exactly, despite binary rounding
  EXPECT_EQ(generator.num_to_select(21), 4);    // ceil(3.15)
  EXPECT_EQ(generator.num_to_select(1), 1);
  EXPECT_EQ(generator.num_to_select(0), 0);
  EXPECT_EQ(generator.num_to_select(1000), 5);  // capped at mask_selection_length
  const MaskedLMRow row = generator.mask(std::vector<int32_t>{kCls, kSep, kPad}, 0, 0);
  EXPECT_THAT(row.mask_weights, ElementsAre(0, 0, 0, 0, 0));  // nothing selectable
}

// Rows [CLS] w... [SEP] [PAD]... with 150..250 words drawn from [10, 30000).
Tensor make_rows(int rows, int64_t length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(rows * length), kPad);
  for (int r = 0; r < rows; ++r) {
    const int64_t words = 150 + static_cast<int64_t>(rng() % 101);
    int32_t* row = ids.data() + r * length;
    row[0] = kCls;
    for (int64_t i = 1; i <= words; ++i) row[i] = 10 + static_cast<int32_t>(rng() % 29990);
    row[words + 1] = kSep;
  }
  return from_values(ids, Shape{rows, length});
}

TEST(MaskedLMMaskGeneratorTest, StatisticsOverManyPositions) {
  const int rows = 2000;
  const int64_t length = 256, m = 40;
  const Tensor input = make_rows(rows, length, 3);
  const MaskedLMMaskGenerator generator(options(0.15, m));
  const Tree out = generator.mask_batch(input, /*epoch=*/1, /*first_element=*/0);
  const std::vector<int32_t> in = input.to_vector<int32_t>();
  const std::vector<int32_t> masked = out["token_ids"].tensor().to_vector<int32_t>();
  const std::vector<int32_t> positions = out["mask_positions"].tensor().to_vector<int32_t>();
  const std::vector<float> weights = out["mask_weights"].tensor().to_vector<float>();
  int64_t selectable = 0, chosen = 0, as_mask = 0, as_random = 0, kept = 0, first_half = 0;
  for (int r = 0; r < rows; ++r) {
    int64_t words = 0;
    for (int64_t i = 0; i < length; ++i) words += in[static_cast<size_t>(r * length + i)] >= 10;
    selectable += words;
    for (int64_t j = 0; j < m; ++j) {
      if (weights[static_cast<size_t>(r * m + j)] == 0) continue;
      ++chosen;
      const auto at = static_cast<size_t>(r * length + positions[static_cast<size_t>(r * m + j)]);
      ASSERT_GE(in[at], 10) << "a special token was chosen";
      first_half += positions[static_cast<size_t>(r * m + j)] <= words / 2;
      if (masked[at] == kMask) {
        ++as_mask;
      } else if (masked[at] == in[at]) {
        ++kept;
      } else {
        ++as_random;
        ASSERT_LT(masked[at], 30000);
        ASSERT_GE(masked[at], 0);
      }
    }
  }
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] < 10) {
      EXPECT_EQ(masked[i], in[i]);  // specials are never replaced
    }
  }
  ASSERT_GT(selectable, 100'000);
  EXPECT_NEAR(static_cast<double>(chosen) / static_cast<double>(selectable), 0.15, 0.005);
  EXPECT_NEAR(static_cast<double>(as_mask) / static_cast<double>(chosen), 0.8, 0.01);
  EXPECT_NEAR(static_cast<double>(as_random) / static_cast<double>(chosen), 0.1, 0.01);
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(chosen), 0.1, 0.01);
  EXPECT_NEAR(static_cast<double>(first_half) / static_cast<double>(chosen), 0.5, 0.02);  // positions spread evenly
}

TEST(MaskedLMMaskGeneratorTest, SameMasksWhateverTheThreadSplit) {
  const int rows = 90;
  const int64_t length = 256;
  const Tensor input = make_rows(rows, length, 5);
  const MaskedLMMaskGenerator generator(options(0.15, 40));
  const Tree whole = generator.mask_batch(input, 2, 1000);
  std::vector<Tree> parts(3);
  std::vector<std::thread> threads;
  const std::vector<int32_t> flat = input.to_vector<int32_t>();
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      const std::vector<int32_t> chunk(flat.begin() + t * 30 * length, flat.begin() + (t + 1) * 30 * length);
      parts[static_cast<size_t>(t)] = generator.mask_batch(from_values(chunk, Shape{30, length}), 2, 1000 + 30 * t);
    });
  }
  for (auto& thread : threads) thread.join();
  for (const std::string key : {"token_ids", "mask_positions", "mask_ids"}) {
    std::vector<int32_t> joined;
    for (const Tree& part : parts) {
      const auto values = part[key].tensor().to_vector<int32_t>();
      joined.insert(joined.end(), values.begin(), values.end());
    }
    EXPECT_EQ(joined, whole[key].tensor().to_vector<int32_t>()) << key;
  }
  // Another epoch masks differently.
  const Tree next = generator.mask_batch(input, 3, 1000);
  EXPECT_NE(next["mask_positions"].tensor().to_vector<int32_t>(), whole["mask_positions"].tensor().to_vector<int32_t>());
}

TEST(MaskedLMMaskGeneratorTest, Errors) {
  auto bad = options(0.15, 5);
  bad.vocabulary_size = 0;
  EXPECT_THAT([&] { (void)MaskedLMMaskGenerator(bad); },
              ThrowsMessage<ValueError>(HasSubstr("expected vocabulary_size > 0. Received: vocabulary_size=0")));
  EXPECT_THAT([] { (void)MaskedLMMaskGenerator(options(0.15, 0)); },
              ThrowsMessage<ValueError>(HasSubstr("expected mask_selection_length > 0. Received: "
                                                  "mask_selection_length=0")));
  EXPECT_THAT([] { (void)MaskedLMMaskGenerator(options(1.5, 5)); },
              ThrowsMessage<ValueError>(HasSubstr("expected mask_selection_rate in [0, 1]. Received: "
                                                  "mask_selection_rate=1.5")));
  EXPECT_THAT([] { (void)MaskedLMMaskGenerator(options(0.15, 5, 0.8, 0.3)); },
              ThrowsMessage<ValueError>(HasSubstr("expected mask_token_rate + random_token_rate <= 1")));
  const MaskedLMMaskGenerator generator(options(0.15, 5));
  EXPECT_THAT([&] { (void)generator.mask_batch(from_values<int32_t>({1, 2, 3}), 0, 0); },
              ThrowsMessage<ValueError>(HasSubstr("expected (B, L) int32 token ids")));
}

}  // namespace
}  // namespace chorus::text
