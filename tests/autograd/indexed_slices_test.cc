// IndexedSlices, and the tape's sparse gradients of row gathers (an Embedding lookup):
// the same values as the dense gradient, bit for bit, without a table-sized tensor.

#include "chorus/autograd/indexed_slices.h"

#include <cstring>
#include <functional>

#include "chorus/autograd/tape.h"
#include "chorus/autograd/variable.h"
#include "chorus/ops/ops.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;
using autograd::GradientTape;
using autograd::IndexedSlices;
using autograd::Variable;

TEST(IndexedSlicesTest, ToDenseAddsRepeatedRowsInPositionOrder) {
  const IndexedSlices slices{.values = from_values<float>({1, 2, 10, 20, 100, 200}, {3, 2}),
                             .indices = from_values<int64_t>({2, 0, 2}, {3}),
                             .dense_shape = Shape{4, 2}};
  EXPECT_EQ(slices.to_dense().to_vector<float>(), (std::vector<float>{10, 20, 0, 0, 101, 202, 0, 0}));
}

TEST(IndexedSlicesTest, ATableWithoutRowsHasEmptySlices) {
  const IndexedSlices empty{.values = Tensor::empty({0, 3}), .indices = Tensor::empty({0}, kInt32),
                            .dense_shape = Shape{0, 3}};
  EXPECT_EQ(empty.row_width(), 0);
  const std::vector<IndexedSlices> parts{empty, empty};
  const IndexedSlices both = IndexedSlices::concatenate(parts);
  EXPECT_EQ(both.values.shape(), (Shape{0, 3}));
  EXPECT_EQ(both.to_dense().shape(), (Shape{0, 3}));
  EXPECT_EQ(IndexedSlices::rows_shape(Shape{5, 2, 4}, 7), (Shape{7, 2, 4}));
}

TEST(IndexedSlicesTest, ConcatenateKeepsEveryRowAndWidensMixedIndices) {
  const IndexedSlices a{.values = from_values<float>({1, 2}, {1, 2}), .indices = from_values<int32_t>({3}, {1}),
                        .dense_shape = Shape{4, 2}};
  const IndexedSlices b{.values = from_values<float>({5, 6, 7, 8}, {2, 2}),
                        .indices = from_values<int64_t>({3, 1}, {2}), .dense_shape = Shape{4, 2}};
  const std::vector<IndexedSlices> parts{a, b};
  const IndexedSlices both = IndexedSlices::concatenate(parts);
  EXPECT_EQ(both.indices.dtype(), kInt64);
  EXPECT_EQ(both.indices.to_vector<int64_t>(), (std::vector<int64_t>{3, 3, 1}));
  EXPECT_EQ(both.to_dense().to_vector<float>(), (std::vector<float>{0, 0, 7, 8, 0, 0, 6, 8}));
}

// The gradient of loss_of() for `table`, from one tape asked for dense gradients and
// from another asked for sparse ones.
struct BothWays {
  Tensor dense;          // the first tape's
  Tensor second_dense;   // the second tape's result (undefined where it gave slices)
  IndexedSlices slices;  // the second tape's slices
};

BothWays gradients_both_ways(const Variable& table, const std::function<Tensor()>& loss_of) {
  BothWays out;
  const std::vector<Tensor> source{table.value()};
  {
    GradientTape tape;
    out.dense = tape.gradient(loss_of(), source)[0];
  }
  GradientTape tape;
  std::vector<IndexedSlices> sparse;
  out.second_dense = tape.gradient(loss_of(), source, &sparse)[0];
  EXPECT_EQ(sparse.size(), 1u);
  out.slices = sparse.at(0);
  return out;
}

TEST(GradientTapeSparseTest, AGatheredTableGetsTheRowsItsLookupsRead) {
  Variable table("embedding/embeddings", random_tensor({6, 3}, 1));
  const Tensor ids = from_values<int32_t>({4, 1, 4, 0}, {4});
  const Tensor weights = random_tensor({4, 3}, 2);
  const BothWays got =
      gradients_both_ways(table, [&] { return ops::sum(ops::take(table.value(), ids, 0) * weights); });
  EXPECT_FALSE(got.second_dense.defined());
  ASSERT_TRUE(got.slices.defined());
  EXPECT_EQ(got.slices.indices.to_vector<int32_t>(), (std::vector<int32_t>{4, 1, 4, 0}));
  EXPECT_EQ(got.slices.dense_shape, (Shape{6, 3}));
  EXPECT_TRUE(same_bits(got.slices.to_dense(), got.dense));
}

TEST(GradientTapeSparseTest, TwoLookupsOfOneTableGiveAllTheirRows) {
  Variable table("t", random_tensor({5, 2}, 3));
  const Tensor a = from_values<int32_t>({0, 3}, {2}), b = from_values<int64_t>({3, 3, 4}, {3});
  const BothWays got = gradients_both_ways(table, [&] {
    return ops::sum(ops::square(ops::take(table.value(), a, 0))) + ops::sum(ops::take(table.value(), b, 0) * 3.f);
  });
  ASSERT_TRUE(got.slices.defined());
  EXPECT_EQ(got.slices.indices.numel(), 5);
  EXPECT_TRUE(same_bits(got.slices.to_dense(), got.dense));
}

TEST(GradientTapeSparseTest, ATableAlsoUsedDenselyGetsADenseGradient) {
  Variable table("t", random_tensor({4, 2}, 4));
  const Tensor ids = from_values<int32_t>({1, 1, 2}, {3});
  const BothWays got = gradients_both_ways(table, [&] {
    return ops::sum(ops::take(table.value(), ids, 0)) + ops::sum(table.value() * table.value());
  });
  EXPECT_FALSE(got.slices.defined());
  EXPECT_TRUE(same_bits(got.second_dense, got.dense));
}

TEST(GradientTapeSparseTest, OnlyLeavesAndFloat32RowGathersAreSparse) {
  // A gathered intermediate passes a dense gradient on to what produced it, and a
  // gather along another axis, or of a bfloat16 table, stays dense.
  Variable w("w", random_tensor({3, 2}, 5));
  Variable bf("bf", random_tensor({3, 2}, 6, -1, 1, kBFloat16));
  const Tensor ids = from_values<int32_t>({2, 0}, {2}), columns = from_values<int32_t>({1, 0}, {2});
  GradientTape tape;
  const Tensor doubled = w.value() * 2.f;
  const Tensor loss = ops::sum(ops::take(doubled, ids, 0)) + ops::sum(ops::take(w.value(), columns, 1)) +
                      ops::cast(ops::sum(ops::take(bf.value(), ids, 0)), kFloat32);
  std::vector<IndexedSlices> sparse;
  const std::vector<Tensor> sources{w.value(), doubled, bf.value()};
  const std::vector<Tensor> result = tape.gradient(loss, sources, &sparse);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(sparse[i].defined()) << i;
    EXPECT_TRUE(result[i].defined()) << i;
  }
  // d/dw: 2 in rows 2 and 0 (the doubled gather), plus 1 everywhere (both columns).
  EXPECT_EQ(result[0].to_vector<float>(), (std::vector<float>{3, 3, 1, 1, 3, 3}));
}

TEST(GradientTapeSparseTest, WithoutTheRequestEveryGradientIsDense) {
  Variable table("t", random_tensor({4, 2}, 7));
  GradientTape tape;
  const Tensor loss = ops::sum(ops::take(table.value(), from_values<int32_t>({3}, {1}), 0));
  const std::vector<Tensor> grads = tape.gradient(loss, {table.value()});
  EXPECT_EQ(grads[0].to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 0, 0, 1, 1}));
}

}  // namespace
}  // namespace chorus
