// The accuracy metrics on small hand-made batches: exact, binary, categorical, sparse,
// top-k, the "accuracy" auto kind, dtypes, sample weights and shape errors.
#include "chorus/core/creation.h"
#include "chorus/metrics/metrics.h"
#include "chorus/ops/ops.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using metrics::AccuracyKind;
using namespace testing::test_names;

Tensor f32(std::initializer_list<float> v, const Shape& shape) { return from_values(v, shape); }

TEST(AccuracyTest, ExactEquality) {
  // Keras's doc example: [[1], [2], [3], [4]] vs [[0], [2], [3], [4]] → 0.75.
  metrics::Accuracy acc;
  EXPECT_EQ(acc.name(), "accuracy");
  EXPECT_EQ(acc.kind(), AccuracyKind::kExact);
  acc.update_state(f32({1, 2, 3, 4}, {4, 1}), f32({0, 2, 3, 4}, {4, 1}));
  EXPECT_DOUBLE_EQ(acc.result(), 0.75);
  // With weights [1, 1, 0, 0]: 0.5.
  acc.reset_state();
  acc.update_state(f32({1, 2, 3, 4}, {4, 1}), f32({0, 2, 3, 4}, {4, 1}), f32({1, 1, 0, 0}, {4}));
  EXPECT_DOUBLE_EQ(acc.result(), 0.5);
  // Integer labels against float predictions; (batch,) against (batch, 1).
  acc.reset_state();
  acc.update_state(from_values<int64_t>({1, 2, 3}), f32({1, 2, 2}, {3, 1}));
  EXPECT_DOUBLE_EQ(acc.result(), 2.0 / 3);
  EXPECT_THAT([&] { acc.update_state(f32({1, 2, 3}, {3}), f32({1, 2, 3, 4}, {4})); },
              ThrowsMessage<ShapeError>(HasSubstr("accuracy: y_true shape (3,) and y_pred shape (4,) do not match")));
}

TEST(AccuracyTest, ExactEqualityRoundsLabelsToThePredictionDType) {
  metrics::Accuracy acc;
  const Tensor pred = ops::cast(f32({0.3f, 0.7f}, {2}), kBFloat16);
  acc.update_state(f32({0.3f, 0.7f}, {2}), pred);  // Keras converts y_true to y_pred's dtype
  EXPECT_DOUBLE_EQ(acc.result(), 1.0);
}

TEST(BinaryAccuracyTest, ThresholdsPredictions) {
  // Keras's doc example: [[1], [1], [0], [0]] vs [[0.98], [1], [0], [0.6]] → 0.75.
  metrics::BinaryAccuracy acc;
  EXPECT_EQ(acc.name(), "binary_accuracy");
  acc.update_state(f32({1, 1, 0, 0}, {4, 1}), f32({0.98f, 1, 0, 0.6f}, {4, 1}));
  EXPECT_DOUBLE_EQ(acc.result(), 0.75);
  acc.reset_state();
  acc.update_state(f32({1, 1, 0, 0}, {4, 1}), f32({0.98f, 1, 0, 0.6f}, {4, 1}), f32({1, 0, 0, 1}, {4}));
  EXPECT_DOUBLE_EQ(acc.result(), 0.5);
  // A higher threshold; 0.5 itself is not above 0.5; labels (batch,) and int32.
  metrics::BinaryAccuracy strict({.threshold = 0.7});
  EXPECT_EQ(strict.threshold(), 0.7);
  strict.update_state(from_values<int32_t>({1, 0, 0, 1}), f32({0.6f, 0.5f, 0.71f, 0.9f}, {4, 1}));
  EXPECT_DOUBLE_EQ(strict.result(), 0.5);
  metrics::BinaryAccuracy half;
  half.update_state(f32({0, 1}, {2}), ops::cast(f32({0.5f, 0.5f}, {2}), kBFloat16));
  EXPECT_DOUBLE_EQ(half.result(), 0.5);
  EXPECT_THAT([&] { acc.update_state(f32({1, 0}, {2}), f32({1, 0, 1}, {3})); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("binary_accuracy: y_true shape (2,) and y_pred shape (3,) do not match")));
}

TEST(CategoricalAccuracyTest, ArgmaxOfOneHotLabels) {
  // Keras's doc example: [[0, 0, 1], [0, 1, 0]] vs [[0.1, 0.9, 0.8], [0.05, 0.95, 0]] → 0.5.
  metrics::CategoricalAccuracy acc;
  const Tensor t = f32({0, 0, 1, 0, 1, 0}, {2, 3}), p = f32({0.1f, 0.9f, 0.8f, 0.05f, 0.95f, 0}, {2, 3});
  acc.update_state(t, p);
  EXPECT_DOUBLE_EQ(acc.result(), 0.5);
  acc.reset_state();
  acc.update_state(t, p, f32({0.7f, 0.3f}, {2}));
  EXPECT_NEAR(acc.result(), 0.3, 1e-7);  // float32 weights
  // Ties take the first maximum: [0.4, 0.4, 0.2] predicts class 0.
  metrics::CategoricalAccuracy ties;
  ties.update_state(f32({1, 0, 0, 0, 1, 0}, {2, 3}), f32({0.4f, 0.4f, 0.2f, 0.4f, 0.4f, 0.2f}, {2, 3}));
  EXPECT_DOUBLE_EQ(ties.result(), 0.5);
  // bfloat16 predictions of sequences (2, 2, 3): matches (2, 2), averaged per sample.
  metrics::CategoricalAccuracy seq;
  const Tensor st = f32({1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1}, {2, 2, 3});
  const Tensor sp = ops::cast(f32({5, 1, 1, 1, 1, 5, 1, 1, 5, 5, 1, 1}, {2, 2, 3}), kBFloat16);
  seq.update_state(st, sp);
  EXPECT_DOUBLE_EQ(seq.result(), (0.5 + 0.5) / 2);
  EXPECT_THAT([&] { acc.update_state(f32({0, 1, 0, 0, 1, 0}, {2, 3}), f32({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4})); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("categorical_accuracy: y_true shape (2, 3) and y_pred shape (2, 4) do not match")));
}

TEST(SparseCategoricalAccuracyTest, IntegerLabels) {
  // Keras's doc example: [[2], [1]] vs [[0.1, 0.6, 0.3], [0.05, 0.95, 0]] → 0.5.
  const Tensor p = f32({0.1f, 0.6f, 0.3f, 0.05f, 0.95f, 0}, {2, 3});
  metrics::SparseCategoricalAccuracy acc;
  acc.update_state(f32({2, 1}, {2, 1}), p);
  EXPECT_DOUBLE_EQ(acc.result(), 0.5);
  acc.reset_state();
  acc.update_state(f32({2, 1}, {2, 1}), p, f32({0.7f, 0.3f}, {2}));
  EXPECT_NEAR(acc.result(), 0.3, 1e-7);  // float32 weights
  for (DType dtype : {kInt32, kInt64, kFloat32}) {
    metrics::SparseCategoricalAccuracy typed;
    typed.update_state(ops::cast(f32({1, 1}, {2}), dtype), ops::cast(p, kBFloat16));
    EXPECT_DOUBLE_EQ(typed.result(), 1.0) << dtype_name(dtype);
  }
  // Out-of-range and non-integer labels never match.
  metrics::SparseCategoricalAccuracy odd;
  odd.update_state(f32({7, 1.5f}, {2}), p);
  EXPECT_DOUBLE_EQ(odd.result(), 0.0);
  EXPECT_THAT([&] { acc.update_state(f32({1, 2, 0, 1, 1}, {5}), testing::random_tensor({4, 10}, 1)); },
              ThrowsMessage<ShapeError>(HasSubstr("sparse_categorical_accuracy: expected y_true of shape (4,) or (4, "
                                                  "1) to match y_pred of shape (4, 10), got (5,)")));
}

TEST(TopKCategoricalAccuracyTest, InTopK) {
  // Keras's doc example (k=1): [[0, 0, 1], [0, 1, 0]] vs [[0.1, 0.9, 0.8], [0.05, 0.95, 0]] → 0.5.
  metrics::TopKCategoricalAccuracy top1({.k = 1});
  const Tensor t = f32({0, 0, 1, 0, 1, 0}, {2, 3}), p = f32({0.1f, 0.9f, 0.8f, 0.05f, 0.95f, 0}, {2, 3});
  top1.update_state(t, p);
  EXPECT_DOUBLE_EQ(top1.result(), 0.5);
  top1.reset_state();
  top1.update_state(t, p, f32({0.7f, 0.3f}, {2}));
  EXPECT_NEAR(top1.result(), 0.3, 1e-7);  // float32 weights
  metrics::TopKCategoricalAccuracy top2({.k = 2});
  top2.update_state(t, p);
  EXPECT_DOUBLE_EQ(top2.result(), 1.0);
  metrics::TopKCategoricalAccuracy top5;
  EXPECT_EQ(top5.k(), 5);
  EXPECT_EQ(top5.name(), "top_k_categorical_accuracy");
  top5.update_state(t, p);  // k above the class count: always in
  EXPECT_DOUBLE_EQ(top5.result(), 1.0);
}

TEST(SparseTopKCategoricalAccuracyTest, InTopKCountsTiesAsIn) {
  // Keras's doc example (k=1): [2, 1] vs [[0.1, 0.9, 0.8], [0.05, 0.95, 0]] → 0.5.
  const Tensor p = f32({0.1f, 0.9f, 0.8f, 0.05f, 0.95f, 0}, {2, 3});
  metrics::SparseTopKCategoricalAccuracy top1({.k = 1});
  top1.update_state(from_values<int32_t>({2, 1}), p);
  EXPECT_DOUBLE_EQ(top1.result(), 0.5);
  top1.reset_state();
  top1.update_state(f32({2, 1}, {2, 1}), p, f32({0.7f, 0.3f}, {2}));
  EXPECT_NEAR(top1.result(), 0.3, 1e-7);  // float32 weights
  // in_top_k: the label's score is in when fewer than k scores are strictly greater, so
  // ties at the k-th place all count; a NaN at the label never counts.
  const Tensor tied = f32({0.5f, 0.5f, 0.5f, 0.1f, 0.2f, NAN, 0.3f, 0.4f}, {2, 4});
  metrics::SparseTopKCategoricalAccuracy top2({.k = 2});
  top2.update_state(from_values<int64_t>({2, 1}), tied);
  EXPECT_DOUBLE_EQ(top2.result(), 0.5);  // row 0: 0.5 tied first; row 1: label 1 is NaN
  metrics::SparseTopKCategoricalAccuracy nan_elsewhere({.k = 1});
  nan_elsewhere.update_state(from_values<int64_t>({3}), f32({NAN, 0.1f, 0.2f, 0.9f}, {1, 4}));
  EXPECT_DOUBLE_EQ(nan_elsewhere.result(), 1.0);
  // Out-of-range labels are never in the top k.
  metrics::SparseTopKCategoricalAccuracy out_of_range({.k = 3});
  out_of_range.update_state(from_values<int64_t>({3, -1}), p);
  EXPECT_DOUBLE_EQ(out_of_range.result(), 0.0);
}

TEST(TopKCategoricalAccuracyTest, Errors) {
  EXPECT_THAT([] { metrics::TopKCategoricalAccuracy({.k = 0}); },
              ThrowsMessage<ValueError>(HasSubstr("top_k_categorical_accuracy: expected k >= 1, got 0")));
  EXPECT_THAT([] { metrics::SparseTopKCategoricalAccuracy({.k = -2}); },
              ThrowsMessage<ValueError>(HasSubstr("sparse_top_k_categorical_accuracy: expected k >= 1, got -2")));
  metrics::SparseTopKCategoricalAccuracy sparse;
  EXPECT_THAT([&] { sparse.update_state(from_values<int64_t>({1}), ones({2, 3})); },
              ThrowsMessage<ShapeError>(HasSubstr("sparse_top_k_categorical_accuracy: expected y_true of shape (2,)")));
  EXPECT_THAT([&] { sparse.update_state(from_values<int64_t>({0, 0}), ones({2, 0})); },
              ThrowsMessage<ShapeError>(HasSubstr("sparse_top_k_categorical_accuracy: expected y_pred of shape "
                                                  "(..., classes) with classes >= 1, got (2, 0)")));
  metrics::TopKCategoricalAccuracy dense;
  EXPECT_THAT([&] { dense.update_state(ones({2, 3}), ones({2, 4})); },
              ThrowsMessage<ShapeError>(HasSubstr("top_k_categorical_accuracy: y_true shape (2, 3) and y_pred shape "
                                                  "(2, 4) do not match")));
}

TEST(AccuracyTest, AutoKindFollowsKerasCompileRule) {
  struct Case {
    Tensor y_true, y_pred;
    AccuracyKind kind;
    double result;
  };
  const Tensor probs = f32({0.1f, 0.6f, 0.3f, 0.05f, 0.95f, 0}, {2, 3});
  const std::vector<Case> cases = {
      // Integer labels (batch,) or (batch, 1) with several classes: sparse categorical.
      {from_values<int64_t>({1, 0}), probs, AccuracyKind::kSparseCategorical, 0.5},
      {f32({1, 1}, {2, 1}), probs, AccuracyKind::kSparseCategorical, 1.0},
      // One-hot labels: categorical.
      {f32({0, 1, 0, 1, 0, 0}, {2, 3}), probs, AccuracyKind::kCategorical, 0.5},
      // One output unit: binary with threshold 0.5, whatever the labels' rank.
      {f32({1, 0}, {2}), f32({0.7f, 0.8f}, {2, 1}), AccuracyKind::kBinary, 0.5},
      {f32({1, 0}, {2, 1}), f32({0.7f, 0.2f}, {2, 1}), AccuracyKind::kBinary, 1.0},
  };
  for (const Case& c : cases) {
    metrics::Accuracy acc = metrics::Accuracy::automatic();
    EXPECT_EQ(acc.kind(), AccuracyKind::kAuto);
    acc.update_state(c.y_true, c.y_pred);
    EXPECT_EQ(acc.kind(), c.kind);
    EXPECT_EQ(acc.name(), "accuracy");  // keeps its name
    EXPECT_DOUBLE_EQ(acc.result(), c.result);
  }
  // The kind, once settled, stays across reset_state and into clones.
  metrics::Accuracy acc = metrics::Accuracy::automatic("acc");
  acc.update_state(from_values<int64_t>({1, 0}), probs);
  acc.reset_state();
  EXPECT_EQ(acc.kind(), AccuracyKind::kSparseCategorical);
  EXPECT_EQ(acc.clone()->get_config()["kind"], "sparse_categorical");
  metrics::Accuracy scalar_acc = metrics::Accuracy::automatic();
  EXPECT_THAT(
      [&] { scalar_acc.update_state(scalar(1.0), scalar(1.0)); },
      ThrowsMessage<ShapeError>(HasSubstr("accuracy: expected y_true and y_pred of rank >= 1, got shapes () and ()")));
  EXPECT_THAT([&] { scalar_acc.update_state(Tensor(), ones({2})); },
              ThrowsMessage<ValueError>(HasSubstr("accuracy: y_true is an undefined tensor")));
}

TEST(AccuracyTest, LargeBatchesMatchAReferenceLoop) {
  // 1023 rows of 37 classes (parallel row loops), bfloat16 scores, weights.
  const Tensor scores = ops::cast(testing::random_tensor({1023, 37}, 2), kBFloat16);
  const Tensor weights = testing::random_tensor({1023}, 3, 0, 1);
  std::vector<int64_t> labels(1023);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>((i * 13) % 37);
  const auto sv = scores.to_vector<double>(), wv = weights.to_vector<double>();
  double hits = 0, top5 = 0, total_weight = 0;
  for (int64_t r = 0; r < 1023; ++r) {
    const double* row = sv.data() + r * 37;
    int64_t best = 0, greater = 0;
    for (int64_t c = 1; c < 37; ++c) best = row[c] > row[best] ? c : best;
    for (int64_t c = 0; c < 37; ++c) greater += row[c] > row[labels[static_cast<size_t>(r)]];
    hits += wv[static_cast<size_t>(r)] * (best == labels[static_cast<size_t>(r)]);
    top5 += wv[static_cast<size_t>(r)] * (greater < 5);
    total_weight += wv[static_cast<size_t>(r)];
  }
  metrics::SparseCategoricalAccuracy acc;
  metrics::SparseTopKCategoricalAccuracy top;
  acc.update_state(from_values(labels, {1023}), scores, weights);
  top.update_state(from_values(labels, {1023}), scores, weights);
  EXPECT_NEAR(acc.result(), hits / total_weight, 1e-12);
  EXPECT_NEAR(top.result(), top5 / total_weight, 1e-12);
}

}  // namespace
}  // namespace chorus
