// Mean and Sum: Keras's reduction of values and sample weights, checked on hand values.
#include "chorus/metrics/mean.h"

#include "chorus/core/creation.h"
#include "chorus/metrics/sum.h"
#include "chorus/ops/ops.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;

TEST(MeanTest, ScalarsWithWeights) {
  metrics::Mean mean;
  EXPECT_EQ(mean.name(), "mean");
  EXPECT_EQ(mean.result(), 0.0);  // nothing yet: divide_no_nan
  mean.update_state(2.0);
  mean.update_state(5.0, 2.0);
  EXPECT_DOUBLE_EQ(mean.result(), (2 + 10) / 3.0);
  mean.update_state(scalar(4.0), scalar(1.0));
  EXPECT_DOUBLE_EQ(mean.result(), (2 + 10 + 4) / 4.0);
  mean.update_state(scalar(8.0));  // a scalar counts once
  EXPECT_DOUBLE_EQ(mean.result(), (2 + 10 + 4 + 8) / 5.0);
  EXPECT_EQ(std::vector<double>(mean.state().begin(), mean.state().end()), (std::vector<double>{24, 5}));
}

TEST(MeanTest, BatchesAndPerSampleWeights) {
  // Keras's doc example: Mean of [1, 3, 5, 7] with weights [1, 1, 0, 0] is 2.
  metrics::Mean mean;
  mean.update_state(from_values({1.f, 3.f, 5.f, 7.f}));
  EXPECT_DOUBLE_EQ(mean.result(), 4.0);
  mean.reset_state();
  mean.update_state(from_values({1.f, 3.f, 5.f, 7.f}), from_values({1.f, 1.f, 0.f, 0.f}));
  EXPECT_DOUBLE_EQ(mean.result(), 2.0);
  // A (batch, 1) weight is squeezed; integer weights and values work.
  mean.reset_state();
  mean.update_state(from_values<int32_t>({1, 3, 5, 7}), from_values({2.f, 0.f, 1.f, 1.f}, {4, 1}));
  EXPECT_DOUBLE_EQ(mean.result(), (2 + 5 + 7) / 4.0);
}

TEST(MeanTest, ValuesOfHigherRankAverageOverTrailingAxes) {
  // Values (2, 3): each sample's mean is one value; weights (2,) weigh the samples.
  const Tensor values = from_values({1.f, 2.f, 3.f, 10.f, 20.f, 30.f}, {2, 3});
  metrics::Mean mean;
  mean.update_state(values);
  EXPECT_DOUBLE_EQ(mean.result(), (2 + 20) / 2.0);
  mean.reset_state();
  mean.update_state(values, from_values({3.f, 1.f}));
  EXPECT_DOUBLE_EQ(mean.result(), (3 * 2 + 20) / 4.0);
  // Weights (2, 3): each element weighed; per sample mean(v * w) and mean(w) (Keras).
  mean.reset_state();
  mean.update_state(values, from_values({1.f, 0.f, 0.f, 0.f, 1.f, 1.f}, {2, 3}));
  EXPECT_DOUBLE_EQ(mean.result(), (1.0 / 3 + 50.0 / 3) / (1.0 / 3 + 2.0 / 3));
  // A scalar weight weighs the whole batch as one unit, as Keras's reduction does.
  mean.reset_state();
  mean.update_state(values, scalar(2.0));
  EXPECT_DOUBLE_EQ(mean.result(), 11.0);
  EXPECT_DOUBLE_EQ(mean.state()[1], 2.0);
}

TEST(MeanTest, BFloat16ValuesAndViews) {
  metrics::Mean mean;
  const Tensor values = ops::cast(from_values({0.5f, 1.5f, 2.5f, 3.5f}), kBFloat16);
  mean.update_state(values.first_axis_slice(1, 3));
  EXPECT_DOUBLE_EQ(mean.result(), 2.0);
}

TEST(MeanTest, Errors) {
  metrics::Mean mean({.name = "loss"});
  EXPECT_THAT([&] { mean.update_state(from_values({1.f, 2.f, 3.f, 4.f}), ones({3})); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("loss: sample_weight shape (3,) does not match the values' shape (4,)")));
  EXPECT_THAT([&] { mean.update_state(from_values({1.f, 2.f}), ones({2, 2, 2})); },
              ThrowsMessage<ShapeError>(HasSubstr("loss: sample_weight shape (2, 2, 2) does not match")));
  EXPECT_THAT([&] { mean.update_state(Tensor()); },
              ThrowsMessage<ValueError>(HasSubstr("loss: values is an undefined tensor")));
  metrics::Metric& base = mean;
  EXPECT_THAT([&] { base.update_state(ones({2}), ones({2})); },
              ThrowsMessage<ValueError>(
                  HasSubstr("loss: a Mean takes update_state(values, sample_weight), not (y_true, y_pred)")));
}

TEST(SumTest, SumsWeightedValues) {
  metrics::Sum sum;
  EXPECT_EQ(sum.name(), "sum");
  EXPECT_EQ(sum.state().size(), 1u);
  // Keras's doc example: Sum of [1, 3, 5, 7] is 16, with weights [1, 0, 0, 1] it is 8.
  sum.update_state(from_values({1.f, 3.f, 5.f, 7.f}));
  EXPECT_DOUBLE_EQ(sum.result(), 16.0);
  sum.reset_state();
  sum.update_state(from_values({1.f, 3.f, 5.f, 7.f}), from_values({1.f, 0.f, 0.f, 1.f}));
  EXPECT_DOUBLE_EQ(sum.result(), 8.0);
  sum.update_state(2.5, 2);
  EXPECT_DOUBLE_EQ(sum.result(), 13.0);
  // Higher rank values sum over their trailing axes.
  sum.reset_state();
  sum.update_state(from_values({1.f, 2.f, 3.f, 4.f}, {2, 2}), from_values({1.f, 10.f}));
  EXPECT_DOUBLE_EQ(sum.result(), 3 + 70.0);
  EXPECT_THAT([&] { sum.update_state(ones({2}), ones({3})); },
              ThrowsMessage<ShapeError>(HasSubstr("sum: sample_weight shape (3,) does not match")));
  metrics::Metric& base = sum;
  EXPECT_THAT([&] { base.update_state(ones({2}), ones({2})); },
              ThrowsMessage<ValueError>(HasSubstr("sum: a Sum takes update_state(values, sample_weight)")));
}

}  // namespace
}  // namespace chorus
