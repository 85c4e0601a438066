#include "chorus/core/ragged_tensor.h"

#include <algorithm>

#include <fmt/format.h>

#include "chorus/core/creation.h"

namespace chorus {
namespace {

// `t` (1-D int32 or int64, named `what` in errors) as a fresh int64 vector.
std::vector<int64_t> int64_entries(const Tensor& t, const char* op, const char* what) {
  if (!t.defined()) throw_error<ValueError>("RaggedTensor::{}: {} is an undefined tensor", op, what);
  if (t.dtype() != kInt64 && t.dtype() != kInt32) {
    throw_error<DTypeError>("RaggedTensor::{}: expected {} of dtype int64 or int32, got {}", op, what,
                            dtype_name(t.dtype()));
  }
  if (t.rank() != 1) {
    throw_error<ShapeError>("RaggedTensor::{}: expected {} of rank 1, got shape {}", op, what, t.shape().to_string());
  }
  return t.to_vector<int64_t>();
}

void check_values(const Tensor& values, const char* op) {
  if (!values.defined()) throw_error<ValueError>("RaggedTensor::{}: values is an undefined tensor", op);
  if (values.rank() == 0) {
    throw_error<ShapeError>("RaggedTensor::{}: expected values of rank >= 1, got a scalar", op);
  }
}

// The inner dims of `shape` (all but the first).
std::vector<int64_t> inner_dims(const Shape& shape) {
  return std::vector<int64_t>(shape.dims().begin() + 1, shape.dims().end());
}

}  // namespace

RaggedTensor RaggedTensor::from_row_splits(Tensor values, const Tensor& row_splits) {
  check_values(values, "from_row_splits");
  const std::vector<int64_t> splits = int64_entries(row_splits, "from_row_splits", "row_splits");
  if (splits.empty()) {
    throw_error<ValueError>("RaggedTensor::from_row_splits: expected at least one row split (the leading 0), got none");
  }
  if (splits[0] != 0) {
    throw_error<ValueError>("RaggedTensor::from_row_splits: expected row_splits[0] == 0, got {}", splits[0]);
  }
  for (size_t i = 1; i < splits.size(); ++i) {
    if (splits[i] < splits[i - 1]) {
      throw_error<ValueError>(
          "RaggedTensor::from_row_splits: expected non-decreasing row_splits, got row_splits[{}] = {} after "
          "row_splits[{}] = {}",
          i, splits[i], i - 1, splits[i - 1]);
    }
  }
  if (splits.back() != values.dim(0)) {
    throw_error<ValueError>(
        "RaggedTensor::from_row_splits: expected the last row split (row_splits[{}]) to equal the number of values "
        "{}, got {}",
        splits.size() - 1, values.dim(0), splits.back());
  }
  return RaggedTensor(std::move(values), from_values(splits, Shape{static_cast<int64_t>(splits.size())}));
}

RaggedTensor RaggedTensor::from_row_lengths(Tensor values, const Tensor& row_lengths) {
  check_values(values, "from_row_lengths");
  const std::vector<int64_t> lengths = int64_entries(row_lengths, "from_row_lengths", "row_lengths");
  std::vector<int64_t> splits(lengths.size() + 1, 0);
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] < 0) {
      throw_error<ValueError>("RaggedTensor::from_row_lengths: expected row lengths >= 0, got row_lengths[{}] = {}",
                              i, lengths[i]);
    }
    splits[i + 1] = splits[i] + lengths[i];
  }
  if (splits.back() != values.dim(0)) {
    throw_error<ValueError>(
        "RaggedTensor::from_row_lengths: expected row lengths summing to the number of values {}, got {} "
        "over {} rows",
        values.dim(0), splits.back(), lengths.size());
  }
  return RaggedTensor(std::move(values), from_values(splits, Shape{static_cast<int64_t>(splits.size())}));
}

RaggedTensor RaggedTensor::from_rows(std::span<const Tensor> rows) {
  if (rows.empty()) throw_error<ValueError>("RaggedTensor::from_rows: expected at least one row, got none");
  const Tensor& first = rows[0];
  check_values(first, "from_rows");
  const std::vector<int64_t> inner = inner_dims(first.shape());
  std::vector<int64_t> splits{0};
  for (size_t r = 0; r < rows.size(); ++r) {
    const Tensor& row = rows[r];
    check_values(row, "from_rows");
    if (row.dtype() != first.dtype()) {
      throw_error<DTypeError>("RaggedTensor::from_rows: row {} has dtype {}, but row 0 has {}", r,
                              dtype_name(row.dtype()), dtype_name(first.dtype()));
    }
    if (inner_dims(row.shape()) != inner) {
      throw_error<ShapeError>(
          "RaggedTensor::from_rows: row {} has shape {}, but row 0 has shape {}: rows may differ only in their "
          "first dimension",
          r, row.shape().to_string(), first.shape().to_string());
    }
    splits.push_back(splits.back() + row.dim(0));
  }
  Shape shape{splits.back()};
  for (int64_t d : inner) shape.push_back(d);
  Tensor values = Tensor::empty(shape, first.dtype());
  const size_t row_bytes = static_cast<size_t>(shape.numel() / std::max<int64_t>(splits.back(), 1)) *
                           dtype_size(first.dtype());
  auto* out = static_cast<char*>(values.element_data());
  for (size_t r = 0; r < rows.size(); ++r) {
    copy_elements(out + static_cast<size_t>(splits[r]) * row_bytes, rows[r].element_data(),
                  static_cast<size_t>(rows[r].numel()), first.dtype());
  }
  return RaggedTensor(std::move(values), from_values(splits, Shape{static_cast<int64_t>(splits.size())}));
}

Tensor RaggedTensor::row_lengths() const {
  const int64_t* splits = row_splits_.data<int64_t>();
  std::vector<int64_t> lengths(static_cast<size_t>(nrows()));
  for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = splits[i + 1] - splits[i];
  return from_values(lengths, Shape{nrows()});
}

Tensor RaggedTensor::row(int64_t i) const {
  if (!defined()) throw_error<ValueError>("RaggedTensor::row: use of an undefined ragged tensor");
  if (i < 0 || i >= nrows()) {
    throw_error<IndexError>("RaggedTensor::row: index {} is out of range for {} rows", i, nrows());
  }
  const int64_t* splits = row_splits_.data<int64_t>();
  return values_.first_axis_slice(splits[i], splits[i + 1]);
}

Tensor RaggedTensor::to_tensor(const Tensor& default_value, const std::vector<int64_t>& shape) const {
  if (!defined()) throw_error<ValueError>("RaggedTensor::to_tensor: use of an undefined ragged tensor");
  const Tensor lengths = row_lengths();
  const int64_t* length = lengths.data<int64_t>();
  Shape out_shape{nrows(), nrows() == 0 ? 0 : *std::max_element(length, length + nrows())};
  for (int64_t d : inner_dims(values_.shape())) out_shape.push_back(d);
  if (!shape.empty()) {
    if (static_cast<int>(shape.size()) != out_shape.rank()) {
      throw_error<ShapeError>(
          "RaggedTensor::to_tensor: expected a shape of rank {} (rows, columns{}), got ({}) of rank {}",
          out_shape.rank(), out_shape.rank() > 2 ? ", then the values' inner dims" : "", fmt::join(shape, ", "),
          shape.size());
    }
    for (int a = 0; a < out_shape.rank(); ++a) {
      if (shape[a] < -1) {
        throw_error<ShapeError>("RaggedTensor::to_tensor: expected dimension {} of the shape to be >= -1, got {}", a,
                                shape[a]);
      }
      if (a >= 2 && shape[a] != -1 && shape[a] != out_shape[a]) {
        throw_error<ShapeError>(
            "RaggedTensor::to_tensor: expected dimension {} of the shape to be {} or -1, got {} (values have shape {})",
            a, out_shape[a], shape[a], values_.shape().to_string());
      }
      if (shape[a] >= 0) out_shape[a] = shape[a];
    }
  }
  Tensor out = zeros(out_shape, dtype());
  if (default_value.defined()) {
    if (default_value.dtype() != dtype() || default_value.numel() != 1) {
      throw_error<DTypeError>("RaggedTensor::to_tensor: expected a one-element default_value of dtype {}, got {} of "
                              "shape {}",
                              dtype_name(dtype()), dtype_name(default_value.dtype()), default_value.shape().to_string());
    }
    const size_t size = dtype_size(dtype());
    auto* dst = static_cast<char*>(out.element_data());
    for (int64_t i = 0; i < out.numel(); ++i) copy_elements(dst + i * size, default_value.element_data(), 1, dtype());
  }
  const int64_t inner = values_.dim(0) == 0 ? 0 : values_.numel() / values_.dim(0);
  const size_t elem = dtype_size(dtype());
  auto* dst = static_cast<char*>(out.element_data());
  const int64_t rows = std::min(nrows(), out_shape[0]);
  for (int64_t r = 0; r < rows; ++r) {
    const Tensor src = row(r);
    const int64_t count = std::min(length[r], out_shape[1]) * inner;
    copy_elements(dst + static_cast<size_t>(r * out_shape[1] * inner) * elem, src.element_data(),
                  static_cast<size_t>(count), dtype());
  }
  return out;
}

Tree RaggedTensor::to_tree() const {
  return Tree{{kRowSplitsKey, Tree(row_splits_)}, {kValuesKey, Tree(values_)}};
}

bool RaggedTensor::is_ragged(const Tree& tree) {
  return tree.is_dict() && tree.size() == 2 && tree.contains(kValuesKey) && tree.contains(kRowSplitsKey) &&
         tree[kValuesKey].is_tensor() && tree[kRowSplitsKey].is_tensor();
}

RaggedTensor RaggedTensor::from_tree(const Tree& tree) {
  if (!is_ragged(tree)) {
    throw_error<ValueError>("RaggedTensor::from_tree: expected a dict {{\"{}\", \"{}\"}} of two tensors, got {}",
                            kRowSplitsKey, kValuesKey, tree.to_string());
  }
  return from_row_splits(tree[kValuesKey].tensor(), tree[kRowSplitsKey].tensor());
}

std::string RaggedTensor::to_string() const {
  if (!defined()) return "RaggedTensor(undefined)";
  std::string body;
  for (int64_t i = 0; i < nrows(); ++i) {
    const std::string text = row(i).to_string();
    body += (i == 0 ? "" : ", ") + text.substr(text.find('\n') + 1);
  }
  return fmt::format("RaggedTensor(nrows={}, dtype={})\n[{}]", nrows(), dtype_name(dtype()), body);
}

}  // namespace chorus
