// The string-tensor face the tokenizers share (KerasNLP's tokenizer(x) on tf.string
// tensors and detokenize(ids) on int tensors), written once over a tokenizer's
// std::string functions (TensorTokenizer, the tokenizers' base). Stateless and thread-safe
// as long as the functions passed in are (the tokenizers' are: they are const and immutable).
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

// The tensor API of a tokenizer, written once: the public base of WordPieceTokenizer and
// WordTokenizer (CRTP). `Derived` provides tokenize_into(text, ids) and detokenize(row ids)
// (public), and to this base (a friend) kName ("WordPieceTokenizer", for errors) and
// dense_length(): tokenize's sequence_length (0: ragged). Derived says `using
// TensorTokenizer::tokenize; using TensorTokenizer::detokenize;` beside its own overloads.
template <class Derived>
class TensorTokenizer {
 public:
  // KerasNLP's tokenizer(x) on string tensors: a scalar string -> (n,) int32 ids; a 1-D
  // batch (B,) -> a RaggedTensor of int32 rows, in its Tree form (RaggedTensor::from_tree
  // reads it; dataset.map and ragged_batch carry it). With a dense_length the ids are
  // dense instead: (L,) or (B, L), truncated or padded with 0. Throws DTypeError for a
  // non-string tensor, ValueError for rank > 1 and for invalid UTF-8 (naming the batch
  // element). Thread-safe, as the tokenizers are:
  //   lines.map([&](const Tree& x) { return tokenizer.tokenize(x.tensor()); }, {.num_parallel_calls = 8})
  Tree tokenize(const Tensor& strings) const {
    const Derived& self = derived();
    return tokenize_strings(
        strings, self.dense_length(),
        [&self](std::string_view text, std::vector<int32_t>& ids) { self.tokenize_into(text, ids); },
        std::string(Derived::kName) + ".tokenize");
  }
  // The inverse on tensors: 1-D ids -> a scalar string; (B, L) ids or a RaggedTensor of
  // rows (or its Tree form, what tokenize returns) -> (B,) strings. A dense row is read
  // whole, padding included, as KerasNLP's detokenize does. Throws DTypeError for
  // non-integer ids, ValueError for another rank, IndexError naming the batch element.
  Tensor detokenize(const Tensor& ids) const { return detokenize(Tree(ids)); }
  Tensor detokenize(const RaggedTensor& ids) const { return detokenize_ids(ids, row_detokenizer(), detokenize_name()); }
  Tensor detokenize(const Tree& ids) const { return detokenize_ids(ids, row_detokenizer(), detokenize_name()); }

 private:
  const Derived& derived() const { return static_cast<const Derived&>(*this); }
  DetokenizeRow row_detokenizer() const {
    return [this](const std::vector<int32_t>& row) { return derived().detokenize(row); };
  }
  static std::string detokenize_name() { return std::string(Derived::kName) + ".detokenize"; }
};

}  // namespace chorus::text::detail
