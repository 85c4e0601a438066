// Tests for chorus/text/start_end_packer.h and multi_segment_packer.h: layouts, both
// truncation rules, segment ids, padding masks and errors, worked out by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "chorus/text/multi_segment_packer.h"
#include "chorus/text/start_end_packer.h"
#include "tests/testing/test_names.h"

namespace chorus::text {
namespace {

using namespace testing::test_names;

std::vector<int32_t> v(std::initializer_list<int32_t> ids) { return ids; }

TEST(StartEndPackerTest, AddsStartEndAndPads) {
  const StartEndPacker packer({.sequence_length = 6, .start_value = 1, .end_value = 2, .pad_value = 9});
  EXPECT_THAT(packer.pack(v({5, 6})), ElementsAre(1, 5, 6, 2, 9, 9));
  // Truncation keeps the end id.
  EXPECT_THAT(packer.pack(v({5, 6, 7, 8, 10, 11})), ElementsAre(1, 5, 6, 7, 8, 2));
  const StartEndPacker bare({.sequence_length = 3});
  EXPECT_THAT(bare.pack(v({5, 6, 7, 8})), ElementsAre(5, 6, 7));
  EXPECT_THAT(bare.pack(v({})), ElementsAre(0, 0, 0));
}

TEST(StartEndPackerTest, BatchHasPaddingMask) {
  const StartEndPacker packer({.sequence_length = 4, .start_value = 1, .end_value = 2});
  const Tree out = packer.pack_batch({{7}, {7, 8, 9}});
  EXPECT_EQ(out["token_ids"].tensor().shape(), (Shape{2, 4}));
  EXPECT_THAT(out["token_ids"].tensor().to_vector<int32_t>(), ElementsAre(1, 7, 2, 0, 1, 7, 8, 2));
  EXPECT_EQ(out["padding_mask"].tensor().dtype(), kBool);
  EXPECT_THAT(out["padding_mask"].tensor().to_vector<int32_t>(), ElementsAre(1, 1, 1, 0, 1, 1, 1, 1));
}

TEST(StartEndPackerTest, TooShortIsAnError) {
  EXPECT_THAT([] { (void)StartEndPacker({.sequence_length = 2, .start_value = 1, .end_value = 2}); },
              ThrowsMessage<ValueError>(HasSubstr("StartEndPacker: expected sequence_length > 2 (the start and end "
                                                  "ids). Received: sequence_length=2")));
}

TEST(MultiSegmentPackerTest, PacksOneSegmentLikeBert) {
  const MultiSegmentPacker packer({.sequence_length = 6, .start_value = 101, .end_value = 102});
  const PackedSegments out = packer.pack({v({5, 6})});
  EXPECT_THAT(out.token_ids, ElementsAre(101, 5, 6, 102, 0, 0));
  EXPECT_THAT(out.segment_ids, ElementsAre(0, 0, 0, 0, 0, 0));
  EXPECT_THAT(out.padding_mask, ElementsAre(true, true, true, true, false, false));
}

TEST(MultiSegmentPackerTest, PacksTwoSegmentsWithSegmentIds) {
  const MultiSegmentPacker packer({.sequence_length = 8, .start_value = 101, .end_value = 102, .sep_value = 103});
  const std::vector<int32_t> a{5, 6};
  const std::vector<int32_t> b{7};
  const PackedSegments out = packer.pack({a, b});
  EXPECT_THAT(out.token_ids, ElementsAre(101, 5, 6, 103, 7, 102, 0, 0));
  EXPECT_THAT(out.segment_ids, ElementsAre(0, 0, 0, 0, 1, 1, 0, 0));
  EXPECT_THAT(out.padding_mask, ElementsAre(true, true, true, true, true, true, false, false));
}

TEST(MultiSegmentPackerTest, RoundRobinTruncation) {
  // Room = 8 - 3 specials = 5: handed out a, b, a, b, a -> a keeps 3, b keeps 2.
  const MultiSegmentPacker packer({.sequence_length = 8, .start_value = 1, .end_value = 2});
  const std::vector<int32_t> a{10, 11, 12, 13, 14};
  const std::vector<int32_t> b{20, 21, 22, 23};
  EXPECT_THAT(packer.pack({a, b}).token_ids, ElementsAre(1, 10, 11, 12, 2, 20, 21, 2));
  // A short segment gives its unused share to the other: b has 1, so a keeps 4.
  const std::vector<int32_t> c{30};
  EXPECT_THAT(packer.pack({a, c}).token_ids, ElementsAre(1, 10, 11, 12, 13, 2, 30, 2));
  EXPECT_THAT(packer.trimmed_lengths({5, 5, 5}, 7), ElementsAre(3, 2, 2));
}

TEST(MultiSegmentPackerTest, WaterfallTruncation) {
  const MultiSegmentPacker packer(
      {.sequence_length = 8, .start_value = 1, .end_value = 2, .truncate = Truncation::kWaterfall});
  const std::vector<int32_t> a{10, 11, 12, 13};
  const std::vector<int32_t> b{20, 21, 22, 23};
  // Room 5: a takes its 4, b the 1 left.
  EXPECT_THAT(packer.pack({a, b}).token_ids, ElementsAre(1, 10, 11, 12, 13, 2, 20, 2));
  EXPECT_THAT(packer.trimmed_lengths({2, 9, 9}, 7), ElementsAre(2, 5, 0));
}

TEST(MultiSegmentPackerTest, BatchOfSegmentPairs) {
  const MultiSegmentPacker packer({.sequence_length = 5, .start_value = 1, .end_value = 2});
  const Tree out = packer.pack_batch({{{5}, {6, 7}}, {{8}, {}}});
  EXPECT_THAT(out["token_ids"].tensor().to_vector<int32_t>(), ElementsAre(1, 5, 2, 8, 2, 1, 6, 7, 2, 2));
  EXPECT_THAT(out["segment_ids"].tensor().to_vector<int32_t>(), ElementsAre(0, 0, 0, 1, 1, 0, 0, 0, 0, 1));
  EXPECT_THAT(out["padding_mask"].tensor().to_vector<int32_t>(), ElementsAre(1, 1, 1, 1, 1, 1, 1, 1, 1, 1));
}

TEST(MultiSegmentPackerTest, Errors) {
  EXPECT_THAT([] { (void)MultiSegmentPacker({.sequence_length = 0}); },
              ThrowsMessage<ValueError>(HasSubstr("MultiSegmentPacker: expected sequence_length > 0. Received: "
                                                  "sequence_length=0")));
  const MultiSegmentPacker packer({.sequence_length = 2, .start_value = 1, .end_value = 2});
  const std::vector<int32_t> a{5};
  EXPECT_THAT([&] { (void)packer.pack({a, a}); },
              ThrowsMessage<ValueError>(HasSubstr("sequence_length 2 cannot hold the 3 start/separator/end ids of 2 "
                                                  "segment(s)")));
  EXPECT_THAT([&] { (void)packer.pack(std::vector<std::span<const int32_t>>{}); },
              ThrowsMessage<ValueError>(HasSubstr("expected at least one segment, got none")));
  EXPECT_THAT([&] { (void)packer.pack_batch({{{5}, {6}}, {{7}}}); },
              ThrowsMessage<ValueError>(HasSubstr("segment 1 has 1 rows, expected 2 as segment 0")));
}

}  // namespace
}  // namespace chorus::text
