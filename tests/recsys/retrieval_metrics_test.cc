// RecallAtK against values worked out by hand: one true id per query, several, padding,
// k cutting the retrieved list, sample weights, merging replicas' states, and errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/creation.h"
#include "chorus/recsys/retrieval_metrics.h"
#include "tests/testing/test_names.h"

namespace chorus::recsys {
namespace {

using ::testing::DoubleEq;
using namespace testing::test_names;

// Retrieved ids of 4 queries, best first.
Tensor retrieved() {
  return from_values<int32_t>({5, 3, 9,    //
                               1, 2, 4,    //
                               7, 8, 6,    //
                               0, 11, 12},
                              Shape{4, 3});
}

TEST(RecallAtKTest, OneTrueIdPerQueryIsTopKAccuracy) {
  RecallAtK recall({.k = 2});
  EXPECT_EQ(recall.name(), "recall_at_2");
  // 3 in row 0's top 2 (hit), 4 only at rank 3 (miss at k=2), 10 absent, 0 at rank 1.
  recall.update_state(from_values<int32_t>({3, 4, 10, 0}), retrieved());
  EXPECT_THAT(recall.result(), DoubleEq(2.0 / 4.0));
  // (batch, 1) labels of another integer dtype read the same.
  RecallAtK recall3({.k = 3});
  recall3.update_state(from_values<int64_t>({3, 4, 10, 0}, Shape{4, 1}), retrieved());
  EXPECT_THAT(recall3.result(), DoubleEq(3.0 / 4.0));
  // k beyond the retrieved list uses all of it.
  RecallAtK recall10;
  EXPECT_EQ(recall10.k(), 10);
  recall10.update_state(from_values<int32_t>({3, 4, 10, 0}), retrieved());
  EXPECT_THAT(recall10.result(), DoubleEq(3.0 / 4.0));
}

TEST(RecallAtKTest, SeveralTrueIdsWithPadding) {
  RecallAtK recall({.k = 2, .name = "r"});
  // Row 0: {5, 9} -> 1 of 2 in the top 2; row 1: {1, 2, 2 (duplicate)} -> 2 of 2;
  // row 2: only padding -> 0; row 3: {12, -1 padding} -> 0 of 1.
  recall.update_state(from_values<int32_t>({5, 9, -1, 1, 2, 2, -1, -1, -1, 12, -1, -1}, Shape{4, 3}), retrieved());
  EXPECT_THAT(recall.result(), DoubleEq((0.5 + 1.0 + 0.0 + 0.0) / 4.0));
}

TEST(RecallAtKTest, SampleWeightsAndAccumulation) {
  RecallAtK recall({.k = 1});
  // Hits: row 0 (5), row 3 (0); misses: rows 1, 2. Weights 1, 2, 3, 4.
  recall.update_state(from_values<int32_t>({5, 2, 8, 0}), retrieved(), from_values<float>({1, 2, 3, 4}));
  EXPECT_THAT(recall.result(), DoubleEq((1.0 + 4.0) / 10.0));
  recall.update_state(from_values<int32_t>({5}), from_values<int32_t>({5}, Shape{1, 1}));
  EXPECT_THAT(recall.result(), DoubleEq(6.0 / 11.0));
  recall.reset_state();
  EXPECT_EQ(recall.result(), 0.0);
}

TEST(RecallAtKTest, ReplicaStatesMergeToTheWholeBatch) {
  RecallAtK whole({.k = 2}), first({.k = 2});
  std::unique_ptr<metrics::Metric> second = first.clone();
  const Tensor labels = from_values<int32_t>({3, 4, 10, 0});
  whole.update_state(labels, retrieved());
  first.update_state(labels.first_axis_slice(0, 2), retrieved().first_axis_slice(0, 2));
  second->update_state(labels.first_axis_slice(2, 4), retrieved().first_axis_slice(2, 4));
  first.merge_state(second->state());
  EXPECT_THAT(first.result(), DoubleEq(whole.result()));
  EXPECT_EQ(second->name(), "recall_at_2");
}

TEST(RecallAtKTest, FloatIdsMatchOnlyWhenIntegral) {
  RecallAtK recall({.k = 3});
  recall.update_state(from_values<float>({3.0f, 4.5f, 7.0f, 0.0f}), retrieved());
  EXPECT_THAT(recall.result(), DoubleEq(3.0 / 4.0));
}

TEST(RecallAtKTest, Config) {
  RecallAtK recall({.k = 5, .name = "top5"});
  EXPECT_EQ(recall.get_config(), (nlohmann::json{{"name", "top5"}, {"k", 5}}));
  EXPECT_EQ(recall.to_config()["class_name"], "RecallAtK");
}

TEST(RecallAtKTest, Errors) {
  EXPECT_THAT([] { RecallAtK({.k = 0}); }, ThrowsMessage<ValueError>(HasSubstr("recall_at_0: expected k >= 1, got 0")));
  RecallAtK recall;
  EXPECT_THAT([&] { recall.update_state(from_values<int32_t>({1, 2, 3, 4, 5}), retrieved()); },
              ThrowsMessage<ShapeError>(HasSubstr(
                  "recall_at_10: expected y_pred of shape (batch, m) with y_true of shape (batch,), (batch, 1) or "
                  "(batch, t); got y_true (5,) and y_pred (4, 3)")));
  EXPECT_THAT([&] { recall.update_state(from_values<int32_t>({1, 2, 3, 4}), from_values<int32_t>({1, 2, 3, 4})); },
              ThrowsMessage<ShapeError>(HasSubstr("got y_true (4,) and y_pred (4,)")));
  EXPECT_THAT([&] { recall.update_state(Tensor(), retrieved()); },
              ThrowsMessage<ValueError>(HasSubstr("recall_at_10: y_true is an undefined tensor")));
  EXPECT_THAT([&] { recall.update_state(from_values<int32_t>({1, 2, 3, 4}), retrieved(), from_values<float>({1, 2})); },
              ThrowsMessage<ShapeError>(HasSubstr("recall_at_10: sample_weight shape (2,)")));
}

}  // namespace
}  // namespace chorus::recsys
