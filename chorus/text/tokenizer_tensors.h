// The string-tensor face the tokenizers share (KerasNLP's tokenizer(x) on tf.string
// tensors and detokenize(ids) on int tensors), written once over a tokenizer's
// std::string functions. Internal to chorus/text; stateless and thread-safe as long as
// the functions passed in are (the tokenizers' are: they are const and immutable).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "chorus/core/ragged_tensor.h"
#include "chorus/core/tree.h"

namespace chorus::text::detail {

// Appends the ids of one text to `ids` (no truncation or padding).
using TokenizeInto = std::function<void(std::string_view text, std::vector<int32_t>& ids)>;
// The text of one row of ids.
using DetokenizeRow = std::function<std::string(const std::vector<int32_t>& ids)>;

// `strings`: a scalar or 1-D kString tensor. sequence_length 0: a scalar gives (n,) int32
// ids, a batch (B,) the RaggedTensor of int32 rows in its Tree form. sequence_length > 0:
// (sequence_length,) or (B, sequence_length) int32, each row truncated or padded with 0.
// Throws DTypeError for a non-string tensor and ValueError for rank > 1, both naming
// `who` ("WordPieceTokenizer.tokenize"), and rethrows a text's ValueError naming its batch
// element.
Tree tokenize_strings(const Tensor& strings, int64_t sequence_length, const TokenizeInto& tokenize_into,
                      std::string_view who);

// `ids`: a 1-D int tensor (one sequence) -> a scalar string; a 2-D int tensor (B, L) or a
// RaggedTensor of 1-D int rows (tensor or Tree form) -> (B,) strings. A dense row is read
// whole, padding included (as KerasNLP's detokenize does). Throws DTypeError for
// non-integer ids, ValueError for other ranks or trees, and rethrows an IndexError (an
// id outside the vocabulary) naming the batch element.
Tensor detokenize_ids(const Tree& ids, const DetokenizeRow& detokenize_row, std::string_view who);
Tensor detokenize_ids(const RaggedTensor& ids, const DetokenizeRow& detokenize_row, std::string_view who);

}  // namespace chorus::text::detail
