// Optimizer::apply_gradients with sparse gradients (IndexedSlices): each optimizer's
// result equals the dense update of the same gradient, bit for bit, whether it updates
// only the listed rows (Adagrad on a large table) or densifies; and bad slices fail with
// their variable's name.

#include <cmath>
#include <cstring>

#include "chorus/optimizers/adagrad.h"
#include "chorus/optimizers/adam.h"
#include "chorus/optimizers/sgd.h"
#include "tests/optimizers/optimizer_test_util.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::optimizers {
namespace {

using namespace testing::test_names;
using autograd::IndexedSlices;

// `n` gradient rows for a (rows, width) table: indices with repeats (every third
// repeats an earlier one), values with a -0.0 and a +0.0 row among them.
IndexedSlices slices_for(int64_t rows, int64_t width, int64_t n, uint64_t seed) {
  std::vector<int64_t> indices(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    indices[static_cast<size_t>(i)] = i % 3 == 2 ? indices[static_cast<size_t>(i / 2)] : (i * 7919 + 13) % rows;
  }
  Tensor values = chorus::testing::random_tensor({n, width}, seed);
  float* v = values.data<float>();
  v[0] = -0.0f;
  if (n > 1) std::fill(v + width, v + 2 * width, 0.0f);
  return {.values = values, .indices = from_values<int64_t>(indices, {n}), .dense_shape = Shape{rows, width}};
}

// Steps two copies of a variable, one with sparse gradients and one with their dense
// form, and expects the same bits in the variables and in every optimizer slot.
void expect_sparse_equals_dense(Optimizer& sparse_opt, Optimizer& dense_opt, int64_t rows, int64_t width, int64_t n) {
  const Tensor start = chorus::testing::random_tensor({rows, width}, 11);
  const std::vector<autograd::Variable> sparse_var{autograd::Variable("table", start.clone())};
  const std::vector<autograd::Variable> dense_var{autograd::Variable("table", start.clone())};
  for (uint64_t step = 0; step < 3; ++step) {
    const IndexedSlices slices = slices_for(rows, width, n, 20 + step);
    sparse_opt.apply_gradients(std::vector<Tensor>(1), sparse_var, std::vector<IndexedSlices>{slices});
    dense_opt.apply_gradients(std::vector<Tensor>{slices.to_dense()}, dense_var);
  }
  EXPECT_TRUE(same_bits(sparse_var[0].value(), dense_var[0].value()));
  const auto sparse_slots = sparse_opt.variables(), dense_slots = dense_opt.variables();
  ASSERT_EQ(sparse_slots.size(), dense_slots.size());
  for (size_t i = 0; i < sparse_slots.size(); ++i) {
    EXPECT_TRUE(same_bits(sparse_slots[i].value(), dense_slots[i].value())) << sparse_slots[i].path();
  }
}

TEST(SparseUpdateTest, AdagradUpdatesOnlyTheListedRowsWithTheDenseBits) {
  // Tables with at least two rows per gradient row (SparseRows::pays),
  // so the rows are grouped; widths of one piece, narrower, and wider than a block.
  for (const int64_t width : {32, 5, 300}) {
    Adagrad sparse(0.2), dense(0.2);
    expect_sparse_equals_dense(sparse, dense, /*rows=*/400, width, /*n=*/60);
  }
}

TEST(SparseUpdateTest, AdagradOnASmallTableTakesTheDenseUpdate) {
  // The gradient goes into a buffer kept at +0.0 between steps: each step's different
  // rows would pick up what an earlier step left in it. Widths whose pieces straddle
  // rows, and a table whose last piece is partial (50 x 5 elements).
  for (const int64_t width : {32, 5, 300}) {
    Adagrad sparse(0.2), dense(0.2);
    expect_sparse_equals_dense(sparse, dense, /*rows=*/50, width, /*n=*/60);
  }
}

TEST(SparseUpdateTest, AdagradWithAnInfiniteRateAgreesWithDenseToo) {
  // Dense, an infinite rate turns the untouched rows' 0 / r into NaN; so must sparse.
  Adagrad sparse(std::numeric_limits<double>::infinity()), dense(std::numeric_limits<double>::infinity());
  expect_sparse_equals_dense(sparse, dense, 400, 8, 20);
}

TEST(SparseUpdateTest, PlainSgdUpdatesOnlyTheListedRowsWithTheDenseBits) {
  for (const int64_t width : {32, 5, 300}) {
    SGD sparse(0.3), dense(0.3);
    expect_sparse_equals_dense(sparse, dense, /*rows=*/400, width, /*n=*/60);
  }
  // A small table, and a rate under which -0.0 rows would change: the dense update.
  SGD small_sparse(0.3), small_dense(0.3);
  expect_sparse_equals_dense(small_sparse, small_dense, /*rows=*/50, 8, /*n=*/60);
  SGD negative_sparse(-0.3), negative_dense(-0.3);
  expect_sparse_equals_dense(negative_sparse, negative_dense, 400, 8, 20);
}

TEST(SparseUpdateTest, OptimizersWithoutASparseUpdateUseTheDenseGradient) {
  // Momentum and Adam's moments decay in every row, touched or not (Keras's result).
  SGD sparse_sgd({.learning_rate = 0.1, .momentum = 0.9}), dense_sgd({.learning_rate = 0.1, .momentum = 0.9});
  expect_sparse_equals_dense(sparse_sgd, dense_sgd, 400, 8, 30);
  Adam sparse_adam(0.01), dense_adam(0.01);
  expect_sparse_equals_dense(sparse_adam, dense_adam, 400, 8, 30);
  Adagrad sparse_clipped({.learning_rate = 0.2, .clipnorm = 0.5}), dense_clipped({.learning_rate = 0.2, .clipnorm = 0.5});
  expect_sparse_equals_dense(sparse_clipped, dense_clipped, 400, 8, 30);
}

TEST(SparseUpdateTest, BadSparseGradientsAreRefusedNamingTheVariable) {
  const std::vector<autograd::Variable> vars{autograd::Variable("emb/embeddings", chorus::testing::random_tensor({10, 4}, 1))};
  Adagrad adagrad(0.1);
  auto apply = [&](IndexedSlices slices, Tensor dense = Tensor()) {
    adagrad.apply_gradients(std::vector<Tensor>{dense}, vars, std::vector<IndexedSlices>{slices});
  };
  const IndexedSlices good{.values = chorus::testing::random_tensor({2, 4}, 2), .indices = from_values<int32_t>({1, 9}, {2}),
                           .dense_shape = Shape{10, 4}};
  EXPECT_THAT([&] { apply(good, chorus::testing::random_tensor({10, 4}, 3)); },
              ThrowsMessage<ValueError>(HasSubstr("adagrad: variable 'emb/embeddings' got both a dense and a sparse "
                                                  "gradient")));
  IndexedSlices out_of_range = good;
  out_of_range.indices = from_values<int32_t>({1, 10}, {2});
  EXPECT_THAT([&] { apply(out_of_range); },
              ThrowsMessage<IndexError>(HasSubstr("adagrad: the sparse gradient for 'emb/embeddings' names row 10 at "
                                                  "position 1, outside [0, 10)")));
  IndexedSlices wrong_values = good;
  wrong_values.values = chorus::testing::random_tensor({2, 5}, 4);
  EXPECT_THAT([&] { apply(wrong_values); },
              ThrowsMessage<ValueError>(HasSubstr("adagrad: the sparse gradient for 'emb/embeddings' is malformed: "
                                                  "expected (n,) int32 or int64 indices and values of shape (2, 4), "
                                                  "got indices (2,) and values (2, 5)")));
  IndexedSlices wrong_shape = good;
  wrong_shape.dense_shape = Shape{12, 4};
  EXPECT_THAT([&] { apply(wrong_shape); },
              ThrowsMessage<ShapeError>(HasSubstr("adagrad: the gradient for 'emb/embeddings' has shape (12, 4), "
                                                  "expected the variable's shape (10, 4)")));
  EXPECT_THAT([&] { adagrad.apply_gradients(std::vector<Tensor>(1), vars, std::vector<IndexedSlices>(2)); },
              ThrowsMessage<ValueError>(HasSubstr("adagrad: got 2 gradients for 1 variables")));
}

}  // namespace
}  // namespace chorus::optimizers
