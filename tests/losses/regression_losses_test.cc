// MeanSquaredError, MeanAbsoluteError and Huber against double-precision loops.
#include "chorus/losses/huber.h"
#include "chorus/losses/mean_absolute_error.h"
#include "chorus/losses/mean_squared_error.h"
#include "chorus/ops/ops.h"
#include "tests/losses/loss_reference.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;
using testing::per_row;

double squared(double t, double p) { return (t - p) * (t - p); }
double absolute(double t, double p) { return std::abs(t - p); }

double huber_element(double t, double p, double delta) {
  const double e = std::abs(p - t);
  return e <= delta ? 0.5 * e * e : delta * e - 0.5 * delta * delta;
}

// The per-sample reference for (rows, d) inputs.
template <class F>
Tensor regression_loss_reference(const Tensor& t, const Tensor& p, F f) {
  std::vector<int64_t> dims = p.shape().to_vector();
  dims.pop_back();
  return tensor_of(per_row(t.to_vector<double>(), p.to_vector<double>(), p.dim(-1), true, f), Shape(dims));
}

TEST(MeanSquaredErrorTest, MatchesReferenceAtOddSizes) {
  for (const Shape& shape : {Shape{1, 1}, Shape{7, 3}, Shape{1023, 5}, Shape{2, 3, 4}}) {
    const Tensor t = random_tensor(shape, 1), p = random_tensor(shape, 2);
    EXPECT_TRUE(tensors_near(losses::mean_squared_error(t, p), regression_loss_reference(t, p, squared))) << shape.to_string();
    EXPECT_TRUE(tensors_near(losses::MeanSquaredError().call(t, p), regression_loss_reference(t, p, squared)));
  }
}

TEST(MeanSquaredErrorTest, ViewsAndDTypes) {
  const Tensor t = random_tensor({10, 4}, 3), p = random_tensor({10, 4}, 4);
  const Tensor ts = t.first_axis_slice(3, 8), ps = p.first_axis_slice(3, 8);
  EXPECT_TRUE(tensors_near(losses::mean_squared_error(ts, ps), regression_loss_reference(ts, ps, squared)));
  // Integer labels and bfloat16 predictions compute in float32.
  const Tensor labels = from_values<int32_t>({1, 0, 2, 1}, {2, 2});
  const Tensor pred = ops::cast(random_tensor({2, 2}, 5), kBFloat16);
  const Tensor out = losses::mean_squared_error(labels, pred);
  EXPECT_EQ(out.dtype(), kFloat32);
  EXPECT_TRUE(tensors_near(out, regression_loss_reference(labels, pred, squared)));
}

TEST(MeanSquaredErrorTest, AlignsATrailingOneLikeKeras) {
  // (batch,) against (batch, 1): y_true gets the trailing 1, one loss per sample.
  const Tensor t = random_tensor({6}, 6), p = random_tensor({6, 1}, 7);
  const Tensor expected = regression_loss_reference(t.view({6, 1}), p, squared);
  EXPECT_TRUE(tensors_near(losses::mean_squared_error(t, p), expected));
  EXPECT_TRUE(tensors_near(losses::mean_squared_error(p, t), expected));
  // (2, 3, 1) against (2, 3): the 1 is squeezed, the loss averages over the 3.
  const Tensor a = random_tensor({2, 3, 1}, 8), b = random_tensor({2, 3}, 9);
  EXPECT_TRUE(tensors_near(losses::mean_squared_error(a, b), regression_loss_reference(a.view({2, 3}), b, squared)));
}

TEST(MeanSquaredErrorTest, Gradients) {
  const Tensor t = random_tensor({5, 3}, 10);
  expect_gradients_match([&](const std::vector<Tensor>& in) { return losses::mean_squared_error(t, in[0]); },
                         {random_tensor({5, 3}, 11)});
  expect_gradients_match([&](const std::vector<Tensor>& in) { return losses::mean_squared_error(in[0], in[1]); },
                         {random_tensor({4, 1}, 12), random_tensor({4}, 13)});
}

TEST(MeanSquaredErrorTest, Errors) {
  EXPECT_THAT([] { losses::mean_squared_error(zeros({64, 2}), zeros({64, 3})); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("mean_squared_error: y_true shape (64, 2) and y_pred shape (64, 3) do not match")));
  EXPECT_THAT([] { losses::MeanSquaredError({.name = "reg"})(zeros({4, 1}), zeros({4, 3})); },
              ThrowsMessage<ShapeError>(HasSubstr("reg: y_true shape (4, 1) and y_pred shape (4, 3) do not match")));
  EXPECT_THAT([] { losses::mean_squared_error(scalar(1), scalar(2)); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("mean_squared_error: expected y_true and y_pred of rank >= 1, got shapes () and ()")));
  EXPECT_THAT([] { losses::mean_squared_error(Tensor(), zeros({2})); },
              ThrowsMessage<ValueError>(HasSubstr("mean_squared_error: y_true is an undefined tensor")));
}

TEST(MeanAbsoluteErrorTest, MatchesReferenceAndGradients) {
  for (const Shape& shape : {Shape{1, 1}, Shape{7, 3}, Shape{1023, 2}}) {
    const Tensor t = random_tensor(shape, 14), p = random_tensor(shape, 15);
    EXPECT_TRUE(tensors_near(losses::mean_absolute_error(t, p), regression_loss_reference(t, p, absolute)));
    EXPECT_TRUE(tensors_near(losses::MeanAbsoluteError().call(t, p), regression_loss_reference(t, p, absolute)));
  }
  EXPECT_EQ(losses::MeanAbsoluteError().name(), "mean_absolute_error");
  const Tensor t = random_tensor({4, 3}, 16);
  expect_gradients_match([&](const std::vector<Tensor>& in) { return losses::mean_absolute_error(t, in[0]); },
                         {random_tensor({4, 3}, 17)});
  EXPECT_THAT([] { losses::mean_absolute_error(zeros({3}), zeros({4})); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("mean_absolute_error: y_true shape (3,) and y_pred shape (4,) do not match")));
}

TEST(HuberTest, MatchesReferenceInBothRegimes) {
  for (double delta : {1.0, 0.5, 2.5}) {
    const Tensor t = random_tensor({9, 4}, 18, -3, 3), p = random_tensor({9, 4}, 19, -3, 3);
    const Tensor expected = regression_loss_reference(t, p, [&](double a, double b) { return huber_element(a, b, delta); });
    EXPECT_TRUE(tensors_near(losses::huber(t, p, delta), expected)) << delta;
    EXPECT_TRUE(tensors_near(losses::Huber({.delta = delta}).call(t, p), expected)) << delta;
  }
  // Hand values: errors 0.5 (quadratic: 0.125) and 3 (linear: 3 - 0.5 = 2.5).
  EXPECT_TRUE(tensors_near(losses::huber(from_values({0.f, 0.f}, {1, 2}), from_values({0.5f, 3.f}, {1, 2})),
                           from_values({(0.125f + 2.5f) / 2})));
  EXPECT_EQ(losses::Huber().name(), "huber_loss");
  EXPECT_EQ(losses::Huber().delta(), 1.0);
}

TEST(HuberTest, GradientsAndErrors) {
  const Tensor t = random_tensor({5, 3}, 20, -2, 2);
  expect_gradients_match([&](const std::vector<Tensor>& in) { return losses::huber(t, in[0], 0.7); },
                         {random_tensor({5, 3}, 21, -2, 2)});
  EXPECT_THAT([] { losses::Huber({.delta = -1}); },
              ThrowsMessage<ValueError>(HasSubstr("huber_loss: expected delta > 0, got -1")));
  EXPECT_THAT([] { losses::huber(zeros({2}), zeros({2}), 0); },
              ThrowsMessage<ValueError>(HasSubstr("huber: expected delta > 0, got 0")));
  EXPECT_THAT([] { losses::huber(zeros({2, 2}), zeros({2, 3})); },
              ThrowsMessage<ShapeError>(HasSubstr("huber: y_true shape (2, 2) and y_pred shape (2, 3) do not match")));
}

}  // namespace
}  // namespace chorus
