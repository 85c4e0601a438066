// BinaryCrossentropy against double-precision loops: probabilities (clipped as Keras
// does) and logits, label smoothing, the axis, weights, gradients and errors.
#include "chorus/losses/binary_crossentropy.h"

#include "chorus/ops/ops.h"
#include "tests/losses/loss_reference.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using testing::clip_probability;
using namespace testing::test_names;

double bce_probability(double t, double p) {
  p = clip_probability(p);
  return -(t * std::log(p) + (1 - t) * std::log(1 - p));
}

double bce_logit(double t, double x) { return std::max(x, 0.0) - x * t + std::log1p(std::exp(-std::abs(x))); }

// Per-row means of f over (rows, d), with labels smoothed by s.
template <class F>
Tensor binary_crossentropy_reference(const Tensor& t, const Tensor& p, double s, F f) {
  std::vector<double> tv = t.to_vector<double>();
  for (double& v : tv) v = v * (1 - s) + 0.5 * s;
  return tensor_of(testing::per_row(tv, p.to_vector<double>(), p.dim(-1), true, f), Shape{p.dim(0)});
}

// 0/1 labels of `shape`.
Tensor binary_labels(const Shape& shape, uint64_t seed) {
  return ops::cast(ops::greater(random_tensor(shape, seed), scalar(0.0)), kFloat32);
}

TEST(BinaryCrossentropyTest, ProbabilitiesMatchReference) {
  for (const Shape& shape : {Shape{1, 1}, Shape{7, 3}, Shape{1023, 1}}) {
    const Tensor t = binary_labels(shape, 1), p = random_tensor(shape, 2, 0.01, 0.99);
    EXPECT_TRUE(tensors_near(losses::binary_crossentropy(t, p), binary_crossentropy_reference(t, p, 0, bce_probability)));
  }
}

TEST(BinaryCrossentropyTest, ProbabilitiesAreClippedToEpsilon) {
  // p = 0 for a positive label costs -log(1e-7) = 16.118, not inf.
  const Tensor t = from_values({1.f, 0.f, 1.f, 0.f}, {4, 1}), p = from_values({0.f, 1.f, 1.f, 0.f}, {4, 1});
  const Tensor out = losses::binary_crossentropy(t, p);
  EXPECT_TRUE(tensors_near(out, binary_crossentropy_reference(t, p, 0, bce_probability), 1e-5, 1e-5));
  EXPECT_NEAR(out.to_vector<double>()[0], 16.118, 1e-3);
}

TEST(BinaryCrossentropyTest, LogitsMatchTheStableReference) {
  const Tensor t = binary_labels({9, 4}, 3), x = random_tensor({9, 4}, 4, -6, 6);
  EXPECT_TRUE(tensors_near(losses::binary_crossentropy(t, x, true), binary_crossentropy_reference(t, x, 0, bce_logit)));
  // Large logits neither overflow nor lose the loss.
  const Tensor big = from_values({100.f, -100.f, 100.f, -100.f}, {2, 2});
  const Tensor labels = from_values({1.f, 0.f, 0.f, 1.f}, {2, 2});
  EXPECT_TRUE(tensors_near(losses::binary_crossentropy(labels, big, true), from_values({0.f, 100.f})));
}

TEST(BinaryCrossentropyTest, LabelSmoothing) {
  const Tensor t = binary_labels({6, 2}, 5), p = random_tensor({6, 2}, 6, 0.05, 0.95);
  const Tensor x = random_tensor({6, 2}, 7, -3, 3);
  EXPECT_TRUE(tensors_near(losses::binary_crossentropy(t, p, false, 0.2), binary_crossentropy_reference(t, p, 0.2, bce_probability)));
  EXPECT_TRUE(tensors_near(losses::BinaryCrossentropy({.from_logits = true, .label_smoothing = 0.3}).call(t, x),
                           binary_crossentropy_reference(t, x, 0.3, bce_logit)));
}

TEST(BinaryCrossentropyTest, AxisAndAlignment) {
  const Tensor t = binary_labels({3, 4}, 8), p = random_tensor({3, 4}, 9, 0.05, 0.95);
  // axis 0 averages each column over the 3 rows.
  const Tensor by_column = losses::binary_crossentropy(t, p, false, 0, 0);
  EXPECT_TRUE(tensors_near(by_column, binary_crossentropy_reference(ops::transpose(t), ops::transpose(p), 0, bce_probability)));
  // Labels (batch,) with predictions (batch, 1), the usual binary classifier output.
  const Tensor labels = binary_labels({5}, 10), probs = random_tensor({5, 1}, 11, 0.05, 0.95);
  EXPECT_TRUE(tensors_near(losses::binary_crossentropy(labels, probs),
                           binary_crossentropy_reference(labels.view({5, 1}), probs, 0, bce_probability)));
}

TEST(BinaryCrossentropyTest, ReducedWithWeights) {
  const Tensor t = binary_labels({4, 1}, 12), x = random_tensor({4, 1}, 13, -2, 2);
  const Tensor w = from_values({1.f, 0.f, 2.f, 0.5f});
  const auto per = binary_crossentropy_reference(t, x, 0, bce_logit).to_vector<double>();
  const double expected = (per[0] + 2 * per[2] + 0.5 * per[3]) / 4;
  EXPECT_NEAR(losses::BinaryCrossentropy({.from_logits = true})(t, x, w).item<double>(), expected, 1e-6);
}

TEST(BinaryCrossentropyTest, Gradients) {
  const Tensor t = binary_labels({4, 3}, 14);
  expect_gradients_match(
      [&](const std::vector<Tensor>& in) { return losses::binary_crossentropy(t, in[0], true, 0.1); },
      {random_tensor({4, 3}, 15, -3, 3)});
  expect_gradients_match([&](const std::vector<Tensor>& in) { return losses::binary_crossentropy(t, in[0]); },
                         {random_tensor({4, 3}, 16, 0.1, 0.9)});
}

TEST(BinaryCrossentropyTest, Errors) {
  EXPECT_THAT([] { losses::BinaryCrossentropy({.label_smoothing = 1.5}); },
              ThrowsMessage<ValueError>(HasSubstr("binary_crossentropy: expected label_smoothing in [0, 1], got 1.5")));
  EXPECT_THAT([] { losses::binary_crossentropy(zeros({4, 2}), zeros({4, 3})); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("binary_crossentropy: y_true shape (4, 2) and y_pred shape (4, 3) do not match")));
  EXPECT_THAT([] { losses::binary_crossentropy(zeros({4, 2}), zeros({4, 2}), false, 0, 2); },
              ThrowsMessage<IndexError>(HasSubstr("binary_crossentropy: axis 2 is out of range for shape (4, 2)")));
}

}  // namespace
}  // namespace chorus
