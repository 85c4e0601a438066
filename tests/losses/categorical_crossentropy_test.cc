// CategoricalCrossentropy against double-precision loops: probabilities (rescaled and
// clipped as Keras does) and logits, label smoothing, the axis, gradients and errors.
#include "chorus/losses/categorical_crossentropy.h"

#include "chorus/ops/ops.h"
#include "tests/losses/loss_reference.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using testing::clip_probability;
using namespace testing::test_names;

// -sum(t * log p) per row of (rows, n); p from logits or rescaled, clipped probabilities.
Tensor crossentropy_reference(const Tensor& t, const Tensor& p, bool from_logits, double smoothing = 0) {
  const int64_t n = p.dim(-1), rows = p.numel() / n;
  const auto tv = t.to_vector<double>(), pv = p.to_vector<double>();
  std::vector<double> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = pv.data() + r * n;
    const double lse = testing::log_sum_exp(row, n);
    double total = 0, loss = 0;
    for (int64_t c = 0; c < n; ++c) total += row[c];
    for (int64_t c = 0; c < n; ++c) {
      const double label = tv[static_cast<size_t>(r * n + c)] * (1 - smoothing) + smoothing / static_cast<double>(n);
      const double log_p = from_logits ? row[c] - lse : std::log(clip_probability(row[c] / total));
      loss -= label * log_p;
    }
    out[static_cast<size_t>(r)] = loss;
  }
  std::vector<int64_t> dims = p.shape().to_vector();
  dims.pop_back();
  return tensor_of(out, Shape(dims));
}

// One-hot rows of `shape` (classes last), picked by a seeded pattern.
Tensor one_hot_labels(const Shape& shape, uint64_t seed) {
  const int64_t n = shape.dim(-1), rows = shape.numel() / n;
  std::vector<double> v(static_cast<size_t>(shape.numel()), 0.0);
  for (int64_t r = 0; r < rows; ++r) v[static_cast<size_t>(r * n + static_cast<int64_t>((r * 7 + seed) % n))] = 1;
  return tensor_of(v, shape);
}

TEST(CategoricalCrossentropyTest, LogitsMatchReference) {
  for (const Shape& shape : {Shape{1, 1}, Shape{7, 3}, Shape{1023, 10}, Shape{2, 3, 5}}) {
    const Tensor t = one_hot_labels(shape, 1), x = random_tensor(shape, 2, -4, 4);
    EXPECT_TRUE(tensors_near(losses::categorical_crossentropy(t, x, true), crossentropy_reference(t, x, true))) << shape.to_string();
  }
  // Logits of 1000 do not overflow.
  const Tensor x = from_values({1000.f, 0.f, -1000.f}, {1, 3}), t = from_values({0.f, 1.f, 0.f}, {1, 3});
  EXPECT_TRUE(tensors_near(losses::categorical_crossentropy(t, x, true), from_values({1000.f})));
}

TEST(CategoricalCrossentropyTest, ProbabilitiesAreRescaledAndClipped) {
  // Rows that do not sum to 1 are rescaled; a zero probability is clipped to 1e-7.
  const Tensor p = from_values({0.2f, 0.2f, 0.4f, 0.f, 0.5f, 0.5f}, {2, 3});
  const Tensor t = from_values({0.f, 0.f, 1.f, 1.f, 0.f, 0.f}, {2, 3});
  const Tensor out = losses::categorical_crossentropy(t, p);
  EXPECT_TRUE(tensors_near(out, crossentropy_reference(t, p, false)));
  EXPECT_NEAR(out.to_vector<double>()[0], -std::log(0.5), 1e-6);
  EXPECT_NEAR(out.to_vector<double>()[1], -std::log(1e-7), 1e-3);
  const Tensor q = random_tensor({9, 4}, 3, 0.01, 1), labels = one_hot_labels({9, 4}, 4);
  EXPECT_TRUE(tensors_near(losses::CategoricalCrossentropy().call(labels, q), crossentropy_reference(labels, q, false)));
}

TEST(CategoricalCrossentropyTest, SoftLabelsAndLabelSmoothing) {
  const Tensor soft = ops::softmax(random_tensor({5, 4}, 5));
  const Tensor x = random_tensor({5, 4}, 6, -3, 3), p = random_tensor({5, 4}, 7, 0.05, 1);
  EXPECT_TRUE(tensors_near(losses::categorical_crossentropy(soft, x, true), crossentropy_reference(soft, x, true)));
  const Tensor t = one_hot_labels({5, 4}, 8);
  EXPECT_TRUE(tensors_near(losses::categorical_crossentropy(t, x, true, 0.1), crossentropy_reference(t, x, true, 0.1)));
  EXPECT_TRUE(tensors_near(losses::CategoricalCrossentropy({.label_smoothing = 0.25, .name = "cce"}).call(t, p),
                           crossentropy_reference(t, p, false, 0.25)));
}

TEST(CategoricalCrossentropyTest, ClassAxisZero) {
  const Tensor t = one_hot_labels({3, 4}, 9), x = random_tensor({3, 4}, 10, -2, 2);
  // Classes along axis 0: the loss of each column.
  const Tensor out = losses::categorical_crossentropy(ops::transpose(t), ops::transpose(x), true, 0, 0);
  EXPECT_TRUE(tensors_near(out, crossentropy_reference(t, x, true)));
  EXPECT_TRUE(tensors_near(
      losses::CategoricalCrossentropy({.from_logits = true, .axis = 0}).call(ops::transpose(t), ops::transpose(x)),
      crossentropy_reference(t, x, true)));
}

TEST(CategoricalCrossentropyTest, Gradients) {
  const Tensor t = one_hot_labels({4, 5}, 11);
  expect_gradients_match(
      [&](const std::vector<Tensor>& in) { return losses::categorical_crossentropy(t, in[0], true, 0.1); },
      {random_tensor({4, 5}, 12, -2, 2)});
  expect_gradients_match([&](const std::vector<Tensor>& in) { return losses::categorical_crossentropy(t, in[0]); },
                         {random_tensor({4, 5}, 13, 0.2, 1)});
  // Gradients reach soft labels too.
  expect_gradients_match(
      [&](const std::vector<Tensor>& in) { return losses::categorical_crossentropy(in[0], in[1], true); },
      {random_tensor({3, 4}, 14, 0, 1), random_tensor({3, 4}, 15, -2, 2)});
}

TEST(CategoricalCrossentropyTest, Errors) {
  EXPECT_THAT([] { losses::categorical_crossentropy(zeros({4, 10}), zeros({4, 9}), true); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("categorical_crossentropy: y_true shape (4, 10) and y_pred shape (4, 9) do not match")));
  EXPECT_THAT(
      [] { losses::CategoricalCrossentropy({.label_smoothing = -0.1}); },
      ThrowsMessage<ValueError>(HasSubstr("categorical_crossentropy: expected label_smoothing in [0, 1], got -0.1")));
  EXPECT_THAT([] { losses::categorical_crossentropy(zeros({4, 3}), zeros({4, 3}), true, 0, -3); },
              ThrowsMessage<IndexError>(HasSubstr("categorical_crossentropy: axis -3 is out of range")));
}

}  // namespace
}  // namespace chorus
