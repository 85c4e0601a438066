// tf.strings on string tensors (DType kString, any shape): each op applies the matching
// std::string function of strings.h / regex.h to every element. Pure functions;
// thread-safe. A tensor of another dtype is a DTypeError naming the op.
//
//   Tensor lines = Tensor::from_strings({"The cat", "sat on the mat"});
//   Tensor lengths = text::length(lines);     // int32, shape (2,): 7 and 14
//   RaggedTensor words = text::split(lines);  // 2 rows: 2 and 4 words
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "chorus/core/ragged_tensor.h"
#include "chorus/core/tensor.h"
#include "chorus/text/strings.h"

namespace chorus::text {

// tf.strings.length: an int32 tensor of `input`'s shape.
Tensor length(const Tensor& input, strings::Unit unit = strings::Unit::kByte);

// tf.strings.lower / upper, element by element (kAscii: TensorFlow's default).
Tensor lower(const Tensor& input, strings::Encoding encoding = strings::Encoding::kAscii);
Tensor upper(const Tensor& input, strings::Encoding encoding = strings::Encoding::kAscii);

// tf.strings.regex_replace / regex_full_match with one pattern compiled once (RE2 syntax).
// Throws ValueError naming a pattern that does not compile.
Tensor regex_replace(const Tensor& input, std::string_view pattern, std::string_view rewrite,
                     bool replace_global = true);
Tensor regex_full_match(const Tensor& input, std::string_view pattern);  // bool tensor

// tf.strings.split of a rank-1 tensor: one ragged row of pieces per element, on runs of
// whitespace when `sep` is empty, else on `sep` (strings::split's rules).
RaggedTensor split(const Tensor& input, std::string_view sep = "", int64_t maxsplit = -1);

// tf.strings.join: the element-wise concatenation of same-shaped string tensors with
// `separator` between them. Throws ShapeError naming the first shape that differs.
Tensor join(const std::vector<Tensor>& inputs, std::string_view separator = "");

// tf.strings.substr, element by element.
Tensor substr(const Tensor& input, int64_t pos, int64_t len, strings::Unit unit = strings::Unit::kByte);

// tf.strings.to_number: a tensor of `out_type` (float32, int32 or int64) and `input`'s
// shape. Throws ValueError naming the element that does not parse.
Tensor to_number(const Tensor& input, DType out_type = kFloat32);

}  // namespace chorus::text
