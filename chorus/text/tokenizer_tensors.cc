#include "chorus/text/tokenizer_tensors.h"

#include <limits>

#include "chorus/core/creation.h"
#include "chorus/core/error.h"

namespace chorus::text::detail {
namespace {

// The int32 ids of a 1-D int32 / int64 tensor (a row view is fine).
std::vector<int32_t> id_row(const Tensor& row, std::string_view who) {
  if (row.dtype() == kInt32) return row.to_vector<int32_t>();
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(row.numel()));
  for (const int64_t id : row.to_vector<int64_t>()) {
    if (id < std::numeric_limits<int32_t>::min() || id > std::numeric_limits<int32_t>::max()) {
      throw_error<IndexError>("{}: id {} is outside the int32 range of vocabulary ids", who, id);
    }
    out.push_back(static_cast<int32_t>(id));
  }
  return out;
}

void check_integer_ids(DType dtype, const Shape& shape, std::string_view who) {
  if (!is_integer(dtype)) {
    throw_error<DTypeError>("{}: expected int32 or int64 ids, got dtype {} (shape {})", who, dtype_name(dtype),
                            shape.to_string());
  }
}

// Row i's text, an IndexError re-thrown naming the batch element.
std::string detokenize_row_of_batch(const Tensor& row, int64_t i, const DetokenizeRow& detokenize_row,
                                    std::string_view who) {
  const std::vector<int32_t> ids = id_row(row, who);
  try {
    return detokenize_row(ids);
  } catch (const IndexError& e) {
    throw_error<IndexError>("{}: batch element {}: {}", who, i, e.what());
  }
}

}  // namespace

Tree tokenize_strings(const Tensor& strings, int64_t sequence_length, const TokenizeInto& tokenize_into,
                      std::string_view who) {
  if (strings.dtype() != kString) {
    throw_error<DTypeError>("{}: expected a string tensor, got dtype {} (shape {})", who, dtype_name(strings.dtype()),
                            strings.shape().to_string());
  }
  if (strings.rank() > 1) {
    throw_error<ValueError>("{}: expected a scalar string or a 1-D batch of strings, got shape {}", who,
                            strings.shape().to_string());
  }
  const auto texts = strings.strings();
  const auto width = static_cast<size_t>(sequence_length);
  std::vector<int32_t> values;
  std::vector<int64_t> row_splits = {0};
  for (size_t i = 0; i < texts.size(); ++i) {
    const size_t start = values.size();
    try {
      tokenize_into(texts[i], values);
    } catch (const ValueError& e) {
      if (strings.rank() == 0) throw;
      throw_error<ValueError>("{}: batch element {}: {}", who, i, e.what());
    }
    if (width > 0) values.resize(start + width, 0);  // truncate or pad the row just added
    row_splits.push_back(static_cast<int64_t>(values.size()));
  }
  const auto n = static_cast<int64_t>(values.size());
  if (strings.rank() == 0) return from_values(values, Shape{n});
  const auto rows = static_cast<int64_t>(texts.size());
  if (width > 0) return from_values(values, Shape{rows, sequence_length});
  return RaggedTensor::from_row_splits(from_values(values, Shape{n}), from_values(row_splits, Shape{rows + 1}))
      .to_tree();
}

Tensor detokenize_ids(const RaggedTensor& ids, const DetokenizeRow& detokenize_row, std::string_view who) {
  check_integer_ids(ids.dtype(), ids.values().shape(), who);
  if (ids.values().rank() != 1) {
    throw_error<ValueError>("{}: expected ragged rows of ids (1-D values), got values of shape {}", who,
                            ids.values().shape().to_string());
  }
  std::vector<std::string> texts;
  texts.reserve(static_cast<size_t>(ids.nrows()));
  for (int64_t i = 0; i < ids.nrows(); ++i) {
    texts.push_back(detokenize_row_of_batch(ids.row(i), i, detokenize_row, who));
  }
  return Tensor::from_strings(std::move(texts));
}

Tensor detokenize_ids(const Tree& ids, const DetokenizeRow& detokenize_row, std::string_view who) {
  if (RaggedTensor::is_ragged(ids)) return detokenize_ids(RaggedTensor::from_tree(ids), detokenize_row, who);
  if (!ids.is_tensor()) {
    throw_error<ValueError>("{}: expected ids as a tensor or a RaggedTensor, got {}", who, ids.to_string());
  }
  const Tensor& t = ids.tensor();
  check_integer_ids(t.dtype(), t.shape(), who);
  if (t.rank() == 1) return Tensor::from_string(detokenize_row(id_row(t, who)));
  if (t.rank() != 2) {
    throw_error<ValueError>("{}: expected 1-D ids (one sequence) or 2-D ids (a batch), got shape {}", who,
                            t.shape().to_string());
  }
  std::vector<std::string> texts;
  texts.reserve(static_cast<size_t>(t.dim(0)));
  for (int64_t i = 0; i < t.dim(0); ++i) {
    texts.push_back(
        detokenize_row_of_batch(t.first_axis_slice(i, i + 1).view(Shape{t.dim(1)}), i, detokenize_row, who));
  }
  return Tensor::from_strings(std::move(texts));
}

}  // namespace chorus::text::detail
