// RaggedTensor: rows of different lengths (tf.RaggedTensor with one ragged dimension):
// flat `values` (any dtype, strings included; rank >= 1) cut into rows by int64
// `row_splits`. A value type holding two Tensor handles: copying it is shallow, and rows
// are views of `values`. Immutable; reading from many threads is safe.
//
//   auto words = RaggedTensor::from_row_lengths(Tensor::from_strings({"a", "b", "c"}),
//                                               from_values<int64_t>({2, 0, 1}));
//   words.row(0);                     // ["a", "b"]
//   words.to_tensor();                // [["a", "b"], ["", ""], ["c", ""]]
//
// In a Tree (a dataset element, a batch) a RaggedTensor is the dict
//   {"__ragged_row_splits__": row_splits, "__ragged_values__": values}
// (to_tree / from_tree / is_ragged), as tf.nest's expand_composites flattens a
// RaggedTensor into its component tensors: every stage that moves leaves (shuffle,
// cache, prefetch, take, zip...) carries it unchanged; ragged_batch makes it and
// unbatch turns it back into its rows.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "chorus/core/tensor.h"
#include "chorus/core/tree.h"

namespace chorus {

class RaggedTensor {
 public:
  // The dict keys of the Tree form.
  static constexpr const char* kValuesKey = "__ragged_values__";
  static constexpr const char* kRowSplitsKey = "__ragged_row_splits__";

  RaggedTensor() = default;  // undefined: defined() is false

  // Row i is values[row_splits[i] : row_splits[i + 1]]. row_splits is a 1-D int64 (or
  // int32, converted) tensor that starts at 0, never decreases and ends at
  // values.dim(0). Throws ShapeError / DTypeError / ValueError naming the offending
  // index ("RaggedTensor::from_row_splits: expected non-decreasing row_splits, got
  // row_splits[2] = 1 after row_splits[1] = 3").
  static RaggedTensor from_row_splits(Tensor values, const Tensor& row_splits);
  // Row i has row_lengths[i] values (1-D int64 or int32, each >= 0, summing to
  // values.dim(0)). Throws like from_row_splits, naming the row.
  static RaggedTensor from_row_lengths(Tensor values, const Tensor& row_lengths);
  // The rows stacked: each row has rank >= 1, and all have one dtype and the same dims
  // after the first. Throws ValueError for no rows, ShapeError / DTypeError naming the row.
  static RaggedTensor from_rows(std::span<const Tensor> rows);

  bool defined() const { return values_.defined(); }
  const Tensor& values() const { return values_; }
  // (nrows + 1,) int64.
  const Tensor& row_splits() const { return row_splits_; }
  DType dtype() const { return values_.dtype(); }
  int64_t nrows() const { return row_splits_.numel() - 1; }
  // (nrows,) int64.
  Tensor row_lengths() const;
  // Row i as a view of values (shape (length, *values.shape[1:])). Throws IndexError.
  Tensor row(int64_t i) const;
  Tensor operator[](int64_t i) const { return row(i); }

  // A dense tensor of shape (nrows, longest row, *values.shape[1:]), or `shape` where
  // given: one entry per dimension of that result, -1 meaning "as above". Rows are
  // truncated or padded with `default_value` (a scalar of this dtype; undefined means 0,
  // false or ""). Throws ShapeError for a shape of another rank or inner dims that
  // differ from the values', DTypeError for a default of another dtype.
  Tensor to_tensor(const Tensor& default_value = Tensor(), const std::vector<int64_t>& shape = {}) const;

  // The Tree form (see the top of this file), and back. from_tree throws ValueError
  // for a tree that is not one; is_ragged says whether it is.
  Tree to_tree() const;
  static RaggedTensor from_tree(const Tree& tree);
  static bool is_ragged(const Tree& tree);

  // e.g. "RaggedTensor(nrows=3, dtype=string)\n[[b'a' b'b'], [], [b'c']]".
  std::string to_string() const;

 private:
  RaggedTensor(Tensor values, Tensor row_splits) : values_(std::move(values)), row_splits_(std::move(row_splits)) {}

  Tensor values_;
  Tensor row_splits_;
};

}  // namespace chorus
