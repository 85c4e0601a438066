// batch, padded_batch and unbatch against plain stacking loops, and their errors.
#include "tests/data/dataset_test_util.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::data {
namespace {

using namespace testing::test_names;

// A generator of sequences: element i is an int32 vector of length lengths[i] holding
// 100 * i + 0, 1, ...
Dataset sequences(std::vector<int64_t> lengths) {
  return Dataset::from_generator([lengths](int64_t) -> Dataset::Generator {
    return [lengths, i = size_t{0}]() mutable -> std::optional<Tree> {
      if (i == lengths.size()) return std::nullopt;
      std::vector<int32_t> values(static_cast<size_t>(lengths[i]));
      for (size_t j = 0; j < values.size(); ++j) values[j] = static_cast<int32_t>(100 * i + j);
      ++i;
      return Tree(from_values(values, Shape{static_cast<int64_t>(values.size())}));
    };
  });
}

TEST(DatasetBatchTest, StacksRowsLikeALoop) {
  for (int64_t n : {1, 7, 1023}) {
    for (int64_t size : {1, 7, 64}) {
      for (bool drop : {false, true}) {
        Tensor x = random_tensor({n, 2, 3}, 5);
        Tensor y = arange(0, static_cast<double>(n), 1, kInt32);
        Tensor base = random_tensor({n + 4}, 6);
        Tensor view = base.first_axis_slice(4, n + 4);  // a view source
        Dataset ds = Dataset::from_tensor_slices(Tree::list({Tree{{"x", x}, {"v", view}}, y})).batch(size, drop);
        const int64_t expected_batches = drop ? n / size : (n + size - 1) / size;
        EXPECT_EQ(ds.cardinality(), expected_batches);
        const auto xv = x.to_vector<float>(), vv = view.to_vector<float>();
        auto it = ds.iterator();
        int64_t row = 0, batches = 0;
        while (auto b = it.next()) {
          const Tensor& bx = (*b)[0]["x"].tensor();
          const Tensor& bv = (*b)[0]["v"].tensor();
          const Tensor& by = (*b)[1].tensor();
          const int64_t rows = bx.dim(0);
          EXPECT_EQ(rows, std::min(size, n - row));
          EXPECT_EQ(bx.shape(), Shape({rows, 2, 3}));
          EXPECT_EQ(by.dtype(), kInt32);
          const auto bxv = bx.to_vector<float>(), bvv = bv.to_vector<float>();
          const auto byv = by.to_vector<int64_t>();
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t k = 0; k < 6; ++k) ASSERT_EQ(bxv[r * 6 + k], xv[(row + r) * 6 + k]);
            ASSERT_EQ(bvv[r], vv[row + r]);
            ASSERT_EQ(byv[r], row + r);
          }
          row += rows;
          ++batches;
        }
        EXPECT_EQ(batches, expected_batches) << n << " " << size << " " << drop;
        EXPECT_EQ(row, drop ? n / size * size : n);
      }
    }
  }
}

TEST(DatasetBatchTest, InOrderSlicesBatchAsViewsOtherwiseFreshTensors) {
  Tensor x = random_tensor({10}, 1);
  // In-memory arrays read in order: each batch is a view of its rows (no copy).
  auto it = Dataset::from_tensor_slices(Tree(x)).batch(4).iterator();
  auto first = it.next(), second = it.next(), third = it.next();
  EXPECT_TRUE(first->tensor().shares_storage(x));
  EXPECT_EQ(second->tensor().to_vector<float>(), x.first_axis_slice(4, 8).to_vector<float>());
  EXPECT_EQ(third->tensor().shape(), Shape{2});
  EXPECT_FALSE(it.next().has_value());
  auto dropping = Dataset::from_tensor_slices(Tree(x)).batch(4, /*drop_remainder=*/true).iterator();
  int batches = 0;
  while (dropping.next()) ++batches;
  EXPECT_EQ(batches, 2);  // the short last batch is dropped
  // After a stage that makes new elements, batches are fresh tensors.
  auto shuffled = Dataset::from_tensor_slices(Tree(x)).shuffle(10, 3).batch(4).iterator();
  auto a = shuffled.next(), b = shuffled.next();
  EXPECT_FALSE(a->tensor().shares_storage(x));
  EXPECT_FALSE(a->tensor().shares_storage(b->tensor()));
}

TEST(DatasetBatchTest, MismatchedElementsNameTheLeafAndElement) {
  Dataset lengths = sequences({3, 3, 4});
  EXPECT_THAT([&] { lengths.batch(3).iterator().next(); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("batch: element 2 of the batch has shape (4,) at (the element), but element 0 has shape "
                            "(3,)")));
  Dataset dtypes = Dataset::from_generator([](int64_t) -> Dataset::Generator {
    return [i = 0]() mutable -> std::optional<Tree> {
      if (i == 2) return std::nullopt;
      return Tree{{"a", zeros({2})}, {"b", zeros({2}, i++ == 0 ? kFloat32 : kInt32)}};
    };
  });
  EXPECT_THAT([&] { dtypes.batch(2).iterator().next(); },
              ThrowsMessage<DTypeError>(
                  HasSubstr("batch: element 1 of the batch has dtype int32 at [\"b\"], but element 0 has float32")));
  Dataset structures = Dataset::from_generator([](int64_t) -> Dataset::Generator {
    return [i = 0]() mutable -> std::optional<Tree> {
      if (i++ == 2) return std::nullopt;
      return i == 1 ? Tree{{"a", zeros({2})}} : Tree{{"b", zeros({2})}};
    };
  });
  EXPECT_THAT([&] { structures.batch(2).iterator().next(); },
              ThrowsMessage<ValueError>(HasSubstr("batch: element 1 of the batch has structure {\"b\": (2,) float32}, "
                                                  "but element 0 has {\"a\": (2,) float32}")));
}

TEST(DatasetBatchTest, PaddedBatchPadsToTheLongest) {
  auto it = sequences({2, 5, 1, 3, 0}).padded_batch(2, {.padding_value = -1}).iterator();
  auto b0 = it.next(), b1 = it.next(), b2 = it.next();
  EXPECT_FALSE(it.next());
  EXPECT_EQ(b0->tensor().shape(), Shape({2, 5}));
  EXPECT_THAT(b0->tensor().to_vector<int32_t>(), ElementsAre(0, 1, -1, -1, -1, 100, 101, 102, 103, 104));
  EXPECT_THAT(b1->tensor().to_vector<int32_t>(), ElementsAre(200, -1, -1, 300, 301, 302));
  EXPECT_EQ(b2->tensor().shape(), Shape({1, 0}));
}

TEST(DatasetBatchTest, PaddedBatchPadsToGivenShapes) {
  // Element i: {"m": (i + 1, 2) float32 of i, "s": () int64}; "m" padded to (4, -1).
  Dataset ds = Dataset::from_generator([](int64_t) -> Dataset::Generator {
    return [i = int64_t{0}]() mutable -> std::optional<Tree> {
      if (i == 3) return std::nullopt;
      const int64_t v = i++;
      return Tree{{"m", full({v + 1, 2}, static_cast<double>(v))}, {"s", from_values<int64_t>({v}, Shape{})}};
    };
  });
  auto it = ds.padded_batch(3, {.padded_shapes = {{4, -1}, {}}, .padding_value = 9}).iterator();
  auto b = it.next();
  ASSERT_TRUE(b);
  EXPECT_EQ((*b)["m"].tensor().shape(), Shape({3, 4, 2}));
  EXPECT_THAT((*b)["m"].tensor().to_vector<float>(),
              ElementsAre(0, 0, 9, 9, 9, 9, 9, 9,   // element 0: one row of 0
                          1, 1, 1, 1, 9, 9, 9, 9,   // element 1: two rows of 1
                          2, 2, 2, 2, 2, 2, 9, 9));  // element 2: three rows of 2
  EXPECT_THAT((*b)["s"].tensor().to_vector<int64_t>(), ElementsAre(0, 1, 2));

  EXPECT_THAT([&] { ds.padded_batch(3, {.padded_shapes = {{2, -1}, {}}}).iterator().next(); },
              ThrowsMessage<ShapeError>(HasSubstr("padded_batch: element 2 of the batch has shape (3, 2) at [\"m\"], "
                                                  "longer than the padded shape (2, -1)")));
  EXPECT_THAT([&] { ds.padded_batch(3, {.padded_shapes = {{4}, {}}}).iterator().next(); },
              ThrowsMessage<ShapeError>(HasSubstr("padded_batch: padded shape of rank 1 for [\"m\"], but its elements "
                                                  "have rank 2")));
  EXPECT_THAT([&] { ds.padded_batch(3, {.padded_shapes = {{4, -1}}}).iterator().next(); },
              ThrowsMessage<ValueError>(
                  HasSubstr("padded_batch: expected one padded shape per leaf (2). Received: 1")));
}

TEST(DatasetBatchTest, PaddedBatchDropsTheRemainderOnRequest) {
  Dataset ds = sequences({1, 2, 3}).padded_batch(2, {.drop_remainder = true});
  EXPECT_EQ(testing::fingerprints(ds).size(), 1u);
  EXPECT_EQ(sequences({1, 2, 3}).padded_batch(2).cardinality(), kUnknownCardinality);
  EXPECT_EQ(Dataset::range(5).padded_batch(2, {.drop_remainder = true}).cardinality(), 2);
}

TEST(DatasetBatchTest, UnbatchInvertsBatch) {
  for (int64_t n : {1, 7, 1023}) {
    Tensor x = random_tensor({n, 3}, 9);
    Dataset rows = Dataset::from_tensor_slices(Tree::list({x, arange(0, static_cast<double>(n), 1, kInt64)}));
    EXPECT_EQ(testing::fingerprints(rows.batch(7).unbatch()), testing::fingerprints(rows)) << n;
  }
  // Rows are views of the batch.
  Tensor m = random_tensor({4, 2}, 1);
  auto it = Dataset::from_tensor_slices(Tree(m)).batch(4).unbatch().iterator();
  auto first = it.next();
  auto second = it.next();
  EXPECT_TRUE(first->tensor().shares_storage(second->tensor()));
}

TEST(DatasetBatchTest, UnbatchRejectsScalarsAndUnevenRows) {
  EXPECT_THAT([] { Dataset::range(3).unbatch().iterator().next(); },
              ThrowsMessage<ShapeError>(HasSubstr(
                  "unbatch: expected tensors of rank >= 1. Received: a scalar at (the element) in input element 0")));
  Dataset uneven = Dataset::from_generator([](int64_t) -> Dataset::Generator {
    return []() -> std::optional<Tree> { return Tree::list({zeros({3}), zeros({2, 5})}); };
  });
  EXPECT_THAT([&] { uneven.unbatch().iterator().next(); },
              ThrowsMessage<ShapeError>(HasSubstr("unbatch: expected every tensor to have the same first dimension. "
                                                  "Received: shape (2, 5) at [1] in input element 0, where the first "
                                                  "tensor has 3 rows")));
}

}  // namespace
}  // namespace chorus::data
