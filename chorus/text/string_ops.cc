#include "chorus/text/string_ops.h"

#include <string>
#include <utility>

#include "chorus/core/creation.h"
#include "chorus/core/error.h"
#include "chorus/text/regex.h"

namespace chorus::text {
namespace {

std::span<const std::string> string_elements(const char* op, const Tensor& input) {
  if (!input.defined()) throw_error<ValueError>("{}: expected a string tensor, got an undefined tensor", op);
  if (input.dtype() != kString) {
    throw_error<DTypeError>("{}: expected a string tensor, got dtype {}", op, dtype_name(input.dtype()));
  }
  return input.strings();
}

// A string tensor of `input`'s shape whose elements are fn(element).
template <class Fn>
Tensor map_strings(const char* op, const Tensor& input, Fn&& fn) {
  const auto elements = string_elements(op, input);
  std::vector<std::string> out;
  out.reserve(elements.size());
  for (const std::string& element : elements) out.push_back(fn(element));
  return Tensor::from_strings(input.shape(), std::move(out));
}

// A `T` tensor of `input`'s shape whose elements are fn(element).
template <class T, class Fn>
Tensor map_to_values(const char* op, const Tensor& input, Fn&& fn) {
  const auto elements = string_elements(op, input);
  Tensor out = Tensor::empty(input.shape(), dtype_of<T>);
  T* values = out.data<T>();
  for (size_t i = 0; i < elements.size(); ++i) values[i] = fn(elements[i]);
  return out;
}

}  // namespace

Tensor length(const Tensor& input, strings::Unit unit) {
  return map_to_values<int32_t>("strings.length", input,
                                [&](const std::string& s) { return static_cast<int32_t>(strings::length(s, unit)); });
}

Tensor lower(const Tensor& input, strings::Encoding encoding) {
  return map_strings("strings.lower", input, [&](const std::string& s) { return strings::lower(s, encoding); });
}

Tensor upper(const Tensor& input, strings::Encoding encoding) {
  return map_strings("strings.upper", input, [&](const std::string& s) { return strings::upper(s, encoding); });
}

Tensor regex_replace(const Tensor& input, std::string_view pattern, std::string_view rewrite, bool replace_global) {
  const Regex regex(pattern);
  return map_strings("strings.regex_replace", input,
                     [&](const std::string& s) { return regex.replace(s, rewrite, replace_global); });
}

Tensor regex_full_match(const Tensor& input, std::string_view pattern) {
  const Regex regex(pattern);
  return map_to_values<bool>("strings.regex_full_match", input,
                             [&](const std::string& s) { return regex.full_match(s); });
}

RaggedTensor split(const Tensor& input, std::string_view sep, int64_t maxsplit) {
  const auto elements = string_elements("strings.split", input);
  if (input.rank() != 1) {
    throw_error<ShapeError>("strings.split: expected a rank-1 string tensor, got shape {}", input.shape().to_string());
  }
  std::vector<std::string> pieces;
  std::vector<int64_t> row_lengths;
  row_lengths.reserve(elements.size());
  for (const std::string& element : elements) {
    auto row = sep.empty() ? strings::split(element) : strings::split(element, sep, maxsplit);
    row_lengths.push_back(static_cast<int64_t>(row.size()));
    for (std::string& piece : row) pieces.push_back(std::move(piece));
  }
  const int64_t rows = static_cast<int64_t>(row_lengths.size());
  return RaggedTensor::from_row_lengths(Tensor::from_strings(std::move(pieces)),
                                       from_values(row_lengths, Shape{rows}));
}

Tensor join(const std::vector<Tensor>& inputs, std::string_view separator) {
  if (inputs.empty()) throw_error<ValueError>("strings.join: expected at least one tensor, got none");
  std::vector<std::span<const std::string>> columns;
  for (size_t k = 0; k < inputs.size(); ++k) {
    columns.push_back(string_elements("strings.join", inputs[k]));
    if (inputs[k].shape() != inputs[0].shape()) {
      throw_error<ShapeError>("strings.join: input {} has shape {}, expected {} as input 0", k,
                              inputs[k].shape().to_string(), inputs[0].shape().to_string());
    }
  }
  std::vector<std::string> out(columns[0].size());
  for (size_t i = 0; i < out.size(); ++i) {
    for (size_t k = 0; k < columns.size(); ++k) {
      if (k > 0) out[i] += separator;
      out[i] += columns[k][i];
    }
  }
  return Tensor::from_strings(inputs[0].shape(), std::move(out));
}

Tensor substr(const Tensor& input, int64_t pos, int64_t len, strings::Unit unit) {
  return map_strings("strings.substr", input, [&](const std::string& s) { return strings::substr(s, pos, len, unit); });
}

Tensor to_number(const Tensor& input, DType out_type) {
  switch (out_type) {
    case kFloat32: return map_to_values<float>("strings.to_number", input, strings::to_number<float>);
    case kInt32: return map_to_values<int32_t>("strings.to_number", input, strings::to_number<int32_t>);
    case kInt64: return map_to_values<int64_t>("strings.to_number", input, strings::to_number<int64_t>);
    default:
      throw_error<DTypeError>("strings.to_number: expected out_type float32, int32 or int64, got {}",
                              dtype_name(out_type));
  }
}

}  // namespace chorus::text
