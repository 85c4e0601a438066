#include "chorus/core/ragged_tensor.h"

#include "chorus/core/creation.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;

std::vector<std::string> strings_of(const Tensor& t) { return {t.strings().begin(), t.strings().end()}; }

TEST(RaggedTensorTest, FromRowLengthsAndSplitsGiveTheSameRows) {
  const Tensor values = from_values<int32_t>({1, 2, 3, 4, 5});
  const RaggedTensor a = RaggedTensor::from_row_lengths(values, from_values<int64_t>({2, 0, 3}));
  const RaggedTensor b = RaggedTensor::from_row_splits(values, from_values<int32_t>({0, 2, 2, 5}));
  EXPECT_EQ(a.nrows(), 3);
  EXPECT_EQ(a.dtype(), kInt32);
  EXPECT_EQ(a.row_splits().to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 2, 5}));
  EXPECT_EQ(b.row_lengths().to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 3}));
  EXPECT_EQ(a[0].to_vector<int32_t>(), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(a.row(1).shape(), (Shape{0}));
  EXPECT_EQ(b.row(2).to_vector<int32_t>(), (std::vector<int32_t>{3, 4, 5}));
  EXPECT_TRUE(a.row(2).shares_storage(values));  // rows are views
  EXPECT_THAT([&] { a.row(3); },
              ThrowsMessage<IndexError>(HasSubstr("RaggedTensor::row: index 3 is out of range for 3 rows")));
}

TEST(RaggedTensorTest, StringRowsAndToTensor) {
  const RaggedTensor words =
      RaggedTensor::from_row_lengths(Tensor::from_strings({"a", "b", "c"}), from_values<int64_t>({2, 0, 1}));
  EXPECT_EQ(strings_of(words.row(0)), (std::vector<std::string>{"a", "b"}));
  const Tensor dense = words.to_tensor();
  EXPECT_EQ(dense.shape(), (Shape{3, 2}));
  EXPECT_EQ(strings_of(dense), (std::vector<std::string>{"a", "b", "", "", "c", ""}));
  const Tensor padded = words.to_tensor(Tensor::from_string("<pad>"), {-1, 3});
  EXPECT_EQ(strings_of(padded),
            (std::vector<std::string>{"a", "b", "<pad>", "<pad>", "<pad>", "<pad>", "c", "<pad>", "<pad>"}));
  EXPECT_EQ(words.to_string(), "RaggedTensor(nrows=3, dtype=string)\n[[b'a' b'b'], [], [b'c']]");
}

TEST(RaggedTensorTest, ToTensorPadsAndTruncatesToAShape) {
  const RaggedTensor r =
      RaggedTensor::from_row_lengths(from_values<float>({1, 2, 3, 4, 5, 6}), from_values<int64_t>({1, 3, 2}));
  EXPECT_EQ(r.to_tensor().to_vector<float>(), (std::vector<float>{1, 0, 0, 2, 3, 4, 5, 6, 0}));
  EXPECT_EQ(r.to_tensor(scalar(-1), {2, 2}).to_vector<float>(), (std::vector<float>{1, -1, 2, 3}));
  EXPECT_EQ(r.to_tensor(Tensor(), {4, -1}).shape(), (Shape{4, 3}));
  // Values of rank 2: rows of (length, 2), padded along the row axis only.
  const RaggedTensor pairs =
      RaggedTensor::from_row_lengths(from_values<int64_t>({1, 2, 3, 4, 5, 6}, Shape{3, 2}), from_values<int64_t>({2, 1}));
  const Tensor dense = pairs.to_tensor();
  EXPECT_EQ(dense.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(dense.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 0, 0}));
  EXPECT_EQ(pairs.row(1).shape(), (Shape{1, 2}));
}

TEST(RaggedTensorTest, InvalidRowSplitsNameTheIndex) {
  const Tensor values = from_values<int32_t>({1, 2, 3});
  EXPECT_THAT([&] { RaggedTensor::from_row_splits(values, from_values<int64_t>({1, 3})); },
              ThrowsMessage<ValueError>(HasSubstr("RaggedTensor::from_row_splits: expected row_splits[0] == 0, got 1")));
  EXPECT_THAT([&] { RaggedTensor::from_row_splits(values, from_values<int64_t>({0, 3, 1, 3})); },
              ThrowsMessage<ValueError>(HasSubstr("expected non-decreasing row_splits, got row_splits[2] = 1 after "
                                                  "row_splits[1] = 3")));
  EXPECT_THAT([&] { RaggedTensor::from_row_splits(values, from_values<int64_t>({0, 1, 2})); },
              ThrowsMessage<ValueError>(HasSubstr("expected the last row split (row_splits[2]) to equal the number of "
                                                  "values 3, got 2")));
  EXPECT_THAT([&] { RaggedTensor::from_row_splits(values, from_values<int64_t>(std::vector<int64_t>{}, Shape{0})); },
              ThrowsMessage<ValueError>(HasSubstr("expected at least one row split")));
  EXPECT_THAT([&] { RaggedTensor::from_row_splits(values, from_values<float>({0, 3})); },
              ThrowsMessage<DTypeError>(HasSubstr("expected row_splits of dtype int64 or int32, got float32")));
  EXPECT_THAT([&] { RaggedTensor::from_row_splits(values, from_values<int64_t>({0, 3}, Shape{1, 2})); },
              ThrowsMessage<ShapeError>(HasSubstr("expected row_splits of rank 1, got shape (1, 2)")));
  EXPECT_THAT([&] { RaggedTensor::from_row_lengths(values, from_values<int64_t>({2, -1, 2})); },
              ThrowsMessage<ValueError>(HasSubstr("expected row lengths >= 0, got row_lengths[1] = -1")));
  EXPECT_THAT([&] { RaggedTensor::from_row_lengths(values, from_values<int64_t>({2, 2})); },
              ThrowsMessage<ValueError>(HasSubstr("expected row lengths summing to the number of values 3, got 4 over "
                                                  "2 rows")));
  EXPECT_THAT([&] { RaggedTensor::from_row_lengths(scalar(1), from_values<int64_t>({1})); },
              ThrowsMessage<ShapeError>(HasSubstr("expected values of rank >= 1, got a scalar")));
}

TEST(RaggedTensorTest, ToTensorRejectsBadShapesAndDefaults) {
  const RaggedTensor r = RaggedTensor::from_row_lengths(from_values<int32_t>({1, 2, 3}), from_values<int64_t>({1, 2}));
  EXPECT_THAT([&] { r.to_tensor(Tensor(), {2, 2, 2}); },
              ThrowsMessage<ShapeError>(HasSubstr("RaggedTensor::to_tensor: expected a shape of rank 2 (rows, columns), "
                                                  "got (2, 2, 2) of rank 3")));
  EXPECT_THAT([&] { r.to_tensor(Tensor(), {2, -3}); },
              ThrowsMessage<ShapeError>(HasSubstr("expected dimension 1 of the shape to be >= -1, got -3")));
  EXPECT_THAT([&] { r.to_tensor(scalar(0.5)); },
              ThrowsMessage<DTypeError>(HasSubstr("expected a one-element default_value of dtype int32, got float32")));
  const RaggedTensor pairs =
      RaggedTensor::from_row_lengths(from_values<int32_t>({1, 2, 3, 4}, Shape{2, 2}), from_values<int64_t>({2}));
  EXPECT_THAT([&] { pairs.to_tensor(Tensor(), {1, 2, 3}); },
              ThrowsMessage<ShapeError>(HasSubstr("expected dimension 2 of the shape to be 2 or -1, got 3")));
}

TEST(RaggedTensorTest, FromRowsAndTheTreeForm) {
  const std::vector<Tensor> rows = {Tensor::from_strings({"a", "b"}), Tensor::from_strings(std::vector<std::string>{}),
                                    Tensor::from_strings({"c"})};
  const RaggedTensor r = RaggedTensor::from_rows(rows);
  EXPECT_EQ(r.row_splits().to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 2, 3}));
  const Tree tree = r.to_tree();
  EXPECT_TRUE(RaggedTensor::is_ragged(tree));
  EXPECT_FALSE(RaggedTensor::is_ragged(Tree(rows[0])));
  EXPECT_EQ(tree.to_string(), "{\"__ragged_row_splits__\": (4,) int64, \"__ragged_values__\": (3,) string}");
  EXPECT_EQ(strings_of(RaggedTensor::from_tree(tree).row(2)), (std::vector<std::string>{"c"}));
  EXPECT_THAT([&] { RaggedTensor::from_tree(Tree(rows[0])); },
              ThrowsMessage<ValueError>(HasSubstr("RaggedTensor::from_tree: expected a dict")));
  EXPECT_THAT([&] { RaggedTensor::from_rows(std::vector<Tensor>{rows[0], from_values<int32_t>({1})}); },
              ThrowsMessage<DTypeError>(HasSubstr("RaggedTensor::from_rows: row 1 has dtype int32, but row 0 has string")));
  EXPECT_THAT([&] { RaggedTensor::from_rows(std::vector<Tensor>{zeros(Shape{1, 2}), zeros(Shape{1, 3})}); },
              ThrowsMessage<ShapeError>(HasSubstr("row 1 has shape (1, 3), but row 0 has shape (1, 2)")));
}

}  // namespace
}  // namespace chorus
