// The MeanSquaredError and MeanAbsoluteError metrics against plain loops.
#include "chorus/core/creation.h"
#include "chorus/metrics/mean_absolute_error.h"
#include "chorus/metrics/mean_squared_error.h"
#include "chorus/ops/ops.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;

// sum_r w_r * mean_c f(t - p) / sum_r w_r over (rows, d).
template <class F>
double regression_metric_reference(const Tensor& t, const Tensor& p, const std::vector<double>& w, F f) {
  const auto tv = t.to_vector<double>(), pv = p.to_vector<double>();
  const int64_t d = p.dim(-1), rows = p.numel() / d;
  double total = 0, count = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = r * d; c < (r + 1) * d; ++c) s += f(tv[static_cast<size_t>(c)] - pv[static_cast<size_t>(c)]);
    total += w[static_cast<size_t>(r)] * s / static_cast<double>(d);
    count += w[static_cast<size_t>(r)];
  }
  return total / count;
}

TEST(RegressionMetricsTest, MeanSquaredError) {
  // Keras's doc example: [[0, 1], [0, 0]] vs [[1, 1], [0, 0]] → 0.25.
  metrics::MeanSquaredError mse;
  EXPECT_EQ(mse.name(), "mean_squared_error");
  mse.update_state(from_values({0.f, 1.f, 0.f, 0.f}, {2, 2}), from_values({1.f, 1.f, 0.f, 0.f}, {2, 2}));
  EXPECT_DOUBLE_EQ(mse.result(), 0.25);
  const Tensor t = random_tensor({7, 3}, 1), p = random_tensor({7, 3}, 2), w = random_tensor({7}, 3, 0, 1);
  mse.reset_state();
  mse.update_state(t, p, w);
  EXPECT_NEAR(mse.result(), regression_metric_reference(t, p, w.to_vector<double>(), [](double e) { return e * e; }), 1e-12);
}

TEST(RegressionMetricsTest, MeanAbsoluteError) {
  metrics::MeanAbsoluteError mae;
  EXPECT_EQ(mae.name(), "mean_absolute_error");
  // (batch,) labels against (batch, 1) predictions, bfloat16.
  const Tensor t = random_tensor({9}, 4), p = ops::cast(random_tensor({9, 1}, 5), kBFloat16);
  mae.update_state(t, p);
  EXPECT_NEAR(mae.result(),
              regression_metric_reference(t.view({9, 1}), p, std::vector<double>(9, 1.0), [](double e) { return std::abs(e); }), 1e-12);
  EXPECT_THAT([&] { mae.update_state(ones({4, 2}), ones({4, 3})); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("mean_absolute_error: y_true shape (4, 2) and y_pred shape (4, 3) do not match")));
}

}  // namespace
}  // namespace chorus
