// SparseCategoricalCrossentropy against double-precision loops: the fused logits op and
// its gradient, probabilities, label dtypes and shapes, weights, and every error.
#include "chorus/losses/sparse_categorical_crossentropy.h"

#include <cstring>

#include "chorus/autograd/tape.h"
#include "chorus/ops/ops.h"
#include "tests/losses/loss_reference.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using testing::clip_probability;
using namespace testing::test_names;

// -log p[label] per row; p from logits or rescaled, clipped probabilities.
Tensor sparse_crossentropy_reference(const Tensor& labels, const Tensor& p, bool from_logits) {
  const int64_t n = p.dim(-1), rows = p.numel() / n;
  const auto lv = labels.to_vector<double>(), pv = p.to_vector<double>();
  std::vector<double> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = pv.data() + r * n;
    const auto label = static_cast<int64_t>(lv[static_cast<size_t>(r)]);
    double total = 0;
    for (int64_t c = 0; c < n; ++c) total += row[c];
    out[static_cast<size_t>(r)] =
        from_logits ? testing::log_sum_exp(row, n) - row[label] : -std::log(clip_probability(row[label] / total));
  }
  std::vector<int64_t> dims = p.shape().to_vector();
  dims.pop_back();
  return tensor_of(out, Shape(dims));
}

// Labels in [0, classes) of `shape`, as int64.
Tensor labels_of(const Shape& shape, int64_t classes, uint64_t seed) {
  std::vector<int64_t> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>((i * 7 + seed * 3) % classes);
  return from_values(v, shape);
}

TEST(SparseCategoricalCrossentropyTest, LogitsMatchReferenceAtOddSizes) {
  for (int64_t rows : {1, 7, 1023}) {
    for (int64_t classes : {1, 10, 33}) {
      const Tensor labels = labels_of({rows}, classes, 1), x = random_tensor({rows, classes}, 2, -5, 5);
      EXPECT_TRUE(tensors_near(losses::sparse_categorical_crossentropy(labels, x, true), sparse_crossentropy_reference(labels, x, true)))
          << rows << "x" << classes;
    }
  }
  // A vocabulary wider than a vector register and than one leaf of the exp-sum.
  const Tensor labels = labels_of({5}, 4099, 3), wide = random_tensor({5, 4099}, 4, -20, 20);
  EXPECT_TRUE(tensors_near(losses::sparse_categorical_crossentropy(labels, wide, true),
                           sparse_crossentropy_reference(labels, wide, true)));
  const Tensor big = from_values({1000.f, 0.f, -1000.f}, {1, 3});
  EXPECT_TRUE(tensors_near(losses::sparse_categorical_crossentropy(from_values<int64_t>({1}), big, true),
                           from_values({1000.f})));
}

TEST(SparseCategoricalCrossentropyTest, ProbabilitiesAreRescaledAndClipped) {
  const Tensor p = random_tensor({9, 5}, 3, 0.01, 1), labels = labels_of({9}, 5, 4);
  EXPECT_TRUE(tensors_near(losses::sparse_categorical_crossentropy(labels, p), sparse_crossentropy_reference(labels, p, false)));
  const Tensor zero = from_values({0.f, 1.f}, {1, 2});
  EXPECT_NEAR(losses::sparse_categorical_crossentropy(from_values<int32_t>({0}), zero).item<double>(), -std::log(1e-7),
              1e-3);
}

TEST(SparseCategoricalCrossentropyTest, LabelDTypesAndShapes) {
  const Tensor x = random_tensor({6, 4}, 5, -2, 2);
  const Tensor labels = labels_of({6}, 4, 6);
  const Tensor expected = sparse_crossentropy_reference(labels, x, true);
  EXPECT_TRUE(tensors_near(losses::sparse_categorical_crossentropy(labels, x, true), expected));
  EXPECT_TRUE(tensors_near(losses::sparse_categorical_crossentropy(ops::cast(labels, kInt32), x, true), expected));
  EXPECT_TRUE(tensors_near(losses::sparse_categorical_crossentropy(ops::cast(labels, kFloat32), x, true), expected));
  EXPECT_TRUE(tensors_near(losses::sparse_categorical_crossentropy(ops::cast(labels, kBFloat16), x, true), expected));
  // (batch, 1) labels, as Keras squeezes them.
  EXPECT_TRUE(tensors_near(losses::sparse_categorical_crossentropy(labels.view({6, 1}), x, true), expected));
  // Sequence outputs: labels (2, 3) against logits (2, 3, 5).
  const Tensor seq = random_tensor({2, 3, 5}, 7), seq_labels = labels_of({2, 3}, 5, 8);
  const Tensor out = losses::sparse_categorical_crossentropy(seq_labels, seq, true);
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_TRUE(tensors_near(out, sparse_crossentropy_reference(seq_labels, seq, true)));
  // Views of a batch.
  const Tensor xs = x.first_axis_slice(2, 5), ls = labels.first_axis_slice(2, 5);
  EXPECT_TRUE(tensors_near(losses::sparse_categorical_crossentropy(ls, xs, true), sparse_crossentropy_reference(ls, xs, true)));
}

TEST(SparseCategoricalCrossentropyTest, BFloat16LogitsComputeInFloat32) {
  const Tensor x = ops::cast(random_tensor({8, 6}, 9, -3, 3), kBFloat16), labels = labels_of({8}, 6, 10);
  const Tensor out = losses::sparse_categorical_crossentropy(labels, x, true);
  EXPECT_EQ(out.dtype(), kFloat32);
  EXPECT_TRUE(tensors_near(out, sparse_crossentropy_reference(labels, x, true)));
}

TEST(SparseCategoricalCrossentropyTest, BFloat16LogitsAreReadInPlaceWithTheFloat32Results) {
  // Read without a float32 copy, they give the float32 path's loss bits, and its gradient
  // rounded once to bfloat16 (what the gradient of a cast to float32 would be).
  for (const int64_t classes : {6, 4099}) {
    const Tensor x = ops::cast(random_tensor({5, classes}, 9, -8, 8), kBFloat16), labels = labels_of({5}, classes, 10);
    const Tensor wide = ops::cast(x, kFloat32), g = from_values({1.f, -0.5f, 2.f, 0.25f, 3.f});
    autograd::GradientTape tape(/*persistent=*/true);
    tape.watch(x);
    tape.watch(wide);
    const Tensor loss = losses::sparse_categorical_crossentropy(labels, x, true);
    const Tensor wide_loss = losses::sparse_categorical_crossentropy(labels, wide, true);
    EXPECT_EQ(std::memcmp(loss.data<float>(), wide_loss.data<float>(), 5 * 4), 0) << classes;
    const Tensor dx = tape.gradient(loss, {x}, g)[0], wide_dx = tape.gradient(wide_loss, {wide}, g)[0];
    ASSERT_EQ(dx.dtype(), kBFloat16);
    const Tensor rounded = ops::cast(wide_dx, kBFloat16);
    EXPECT_EQ(std::memcmp(dx.raw_data(), rounded.raw_data(), static_cast<size_t>(dx.numel()) * 2), 0) << classes;
  }
  // A tie: softmax 1/2 times g = 1 + 3/256 is 0x3F018000, halfway between two bfloat16
  // values; to nearest even it is 0x3F02 (0.5078125), not 0x3F01.
  const Tensor even = ops::cast(zeros({1, 2}), kBFloat16);
  autograd::GradientTape tape;
  tape.watch(even);
  const Tensor loss = losses::sparse_categorical_crossentropy(from_values<int64_t>({0}), even, true);
  const Tensor dx = tape.gradient(loss, {even}, from_values({1.01171875f}))[0];
  EXPECT_EQ(ops::cast(dx, kFloat32).to_vector<float>(), (std::vector<float>{-0.5078125f, 0.5078125f}));
}

TEST(SparseCategoricalCrossentropyTest, ClassAndFunctionAgree) {
  const Tensor x = random_tensor({5, 3}, 11), labels = labels_of({5}, 3, 12);
  const losses::SparseCategoricalCrossentropy loss({.from_logits = true});
  EXPECT_EQ(loss.name(), "sparse_categorical_crossentropy");
  EXPECT_TRUE(loss.from_logits());
  EXPECT_TRUE(tensors_near(loss.call(labels, x), losses::sparse_categorical_crossentropy(labels, x, true)));
  const double expected = testing::mean_of(sparse_crossentropy_reference(labels, x, true).to_vector<double>());
  EXPECT_NEAR(loss(labels, x).item<double>(), expected, 1e-6);
  const Tensor w = from_values({1.f, 2.f, 0.f, 1.f, 1.f});
  const auto per = sparse_crossentropy_reference(labels, x, true).to_vector<double>();
  EXPECT_NEAR(loss(labels, x, w).item<double>(), (per[0] + 2 * per[1] + per[3] + per[4]) / 5, 1e-6);
}

TEST(SparseCategoricalCrossentropyTest, FusedGradientIsSoftmaxMinusOneHot) {
  for (const int64_t classes : {5, 4099}) {
    const Tensor x = random_tensor({4, classes}, 13, -2, 2), labels = labels_of({4}, classes, 14);
    const Tensor g = from_values({1.f, 0.5f, -2.f, 3.f});
    autograd::GradientTape tape;
    tape.watch(x);
    const Tensor loss = losses::sparse_categorical_crossentropy(labels, x, true);
    const Tensor dx = tape.gradient(loss, {x}, g)[0];
    const auto xv = x.to_vector<double>(), gv = g.to_vector<double>(), lv = labels.to_vector<double>();
    std::vector<double> expected(xv.size());
    for (int64_t r = 0; r < 4; ++r) {
      const double lse = testing::log_sum_exp(xv.data() + r * classes, classes);
      for (int64_t c = 0; c < classes; ++c) {
        const double one_hot = c == static_cast<int64_t>(lv[static_cast<size_t>(r)]) ? 1 : 0;
        const auto i = static_cast<size_t>(r * classes + c);
        expected[i] = (std::exp(xv[i] - lse) - one_hot) * gv[static_cast<size_t>(r)];
      }
    }
    EXPECT_TRUE(tensors_near(dx, tensor_of(expected, {4, classes}), 1e-6, 1e-5)) << classes;
  }
}

TEST(SparseCategoricalCrossentropyTest, Gradients) {
  const Tensor labels = labels_of({5}, 4, 15), seq_labels = labels_of({2, 3}, 4, 16);
  expect_gradients_match(
      [&](const std::vector<Tensor>& in) { return losses::sparse_categorical_crossentropy(labels, in[0], true); },
      {random_tensor({5, 4}, 17, -2, 2)});
  expect_gradients_match(
      [&](const std::vector<Tensor>& in) { return losses::sparse_categorical_crossentropy(seq_labels, in[0], true); },
      {random_tensor({2, 3, 4}, 18, -2, 2)});
  expect_gradients_match(
      [&](const std::vector<Tensor>& in) { return losses::sparse_categorical_crossentropy(labels, in[0]); },
      {random_tensor({5, 4}, 19, 0.2, 1)});
  // Through the reduction, as training uses it.
  const losses::SparseCategoricalCrossentropy loss({.from_logits = true});
  expect_gradients_match([&](const std::vector<Tensor>& in) { return loss(labels, in[0]); },
                         {random_tensor({5, 4}, 20, -2, 2)});
}

TEST(SparseCategoricalCrossentropyTest, NothingIsRecordedWithoutATape) {
  const Tensor x = random_tensor({3, 4}, 21), labels = labels_of({3}, 4, 22);
  autograd::GradientTape tape;
  {
    autograd::NoGradGuard no_grad;
    tape.watch(x);
    losses::sparse_categorical_crossentropy(labels, x, true);
  }
  EXPECT_EQ(tape.num_records(), 0u);
}

TEST(SparseCategoricalCrossentropyTest, EmptyBatch) {
  const Tensor x = zeros({0, 10}), labels = zeros({0}, kInt64);
  EXPECT_EQ(losses::sparse_categorical_crossentropy(labels, x, true).shape(), (Shape{0}));
  EXPECT_EQ(losses::SparseCategoricalCrossentropy({.from_logits = true})(labels, x).item<double>(), 0.0);
}

TEST(SparseCategoricalCrossentropyTest, LabelErrors) {
  const Tensor x = random_tensor({4, 10}, 23);
  EXPECT_THAT([&] { losses::sparse_categorical_crossentropy(from_values<int64_t>({1, 2, 3, 12}), x, true); },
              ThrowsMessage<IndexError>(
                  HasSubstr("sparse_categorical_crossentropy: label 12 out of range [0, 10) at batch element 3")));
  EXPECT_THAT([&] { losses::sparse_categorical_crossentropy(from_values<int32_t>({-1, 2, 3, 4}), x); },
              ThrowsMessage<IndexError>(HasSubstr("label -1 out of range [0, 10) at batch element 0")));
  EXPECT_THAT([&] { losses::SparseCategoricalCrossentropy({.name = "scce"})(from_values({0.f, 1.5f, 2.f, 3.f}), x); },
              ThrowsMessage<ValueError>(HasSubstr("scce: label 1.5 at batch element 1 is not an integer")));
  EXPECT_THAT([&] { losses::sparse_categorical_crossentropy(from_values({0.f, NAN, 2.f, 3.f}), x); },
              ThrowsMessage<ValueError>(HasSubstr("label nan at batch element 1 is not an integer")));
  EXPECT_THAT([&] { losses::sparse_categorical_crossentropy(from_values({10.f, 1.f, 2.f, 3.f}), x); },
              ThrowsMessage<IndexError>(HasSubstr("label 10 out of range [0, 10) at batch element 0")));
  const Tensor seq = random_tensor({2, 3, 4}, 24);
  EXPECT_THAT([&] { losses::sparse_categorical_crossentropy(from_values<int64_t>({0, 1, 2, 3, 4, 0}, {2, 3}), seq); },
              ThrowsMessage<IndexError>(HasSubstr("label 4 out of range [0, 4) at index (1, 1)")));
  EXPECT_THAT([&] { losses::sparse_categorical_crossentropy(ones({4}, kBool), x); },
              ThrowsMessage<DTypeError>(HasSubstr("sparse_categorical_crossentropy: expected integer labels (int32, "
                                                  "int64, or floats holding integers), got bool")));
}

TEST(SparseCategoricalCrossentropyTest, ShapeErrors) {
  const Tensor x = random_tensor({4, 10}, 25);
  EXPECT_THAT([&] { losses::sparse_categorical_crossentropy(zeros({5}, kInt64), x, true); },
              ThrowsMessage<ShapeError>(HasSubstr("sparse_categorical_crossentropy: expected y_true of shape (4,) or "
                                                  "(4, 1) to match y_pred of shape (4, 10), got (5,)")));
  EXPECT_THAT([&] { losses::sparse_categorical_crossentropy(zeros({4, 10}), x, true); },
              ThrowsMessage<ShapeError>(HasSubstr("got (4, 10)")));
  EXPECT_THAT([&] { losses::sparse_categorical_crossentropy(zeros({}, kInt64), scalar(1.0), true); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("sparse_categorical_crossentropy: expected y_pred of shape (..., classes), got shape ()")));
  EXPECT_THAT([&] { losses::sparse_categorical_crossentropy(Tensor(), x); },
              ThrowsMessage<ValueError>(HasSubstr("sparse_categorical_crossentropy: y_true is an undefined tensor")));
}

}  // namespace
}  // namespace chorus
