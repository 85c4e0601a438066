// TokenCounter: the token and document counts IndexLookup::adapt() gathers (Keras's
// IndexLookup.update_state), and reading a tensor's elements as tokens. Internal to
// chorus/layers/preprocessing; a counter belongs to one thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "chorus/core/ragged_tensor.h"
#include "chorus/core/tensor.h"

namespace chorus::layers::detail {

template <class Token>
constexpr bool is_string_token = std::is_same_v<Token, std::string>;

// The elements of `x` as tokens: a view of a string tensor's strings, or an int tensor's
// values widened to int64. Throws DTypeError naming `who` and `where` for another dtype.
template <class Token>
auto token_values(const Tensor& x, const std::string& who, const std::string& where) {
  if constexpr (is_string_token<Token>) {
    if (x.dtype() != kString) {
      throw_error<DTypeError>("{}: expected string {}, got dtype {}", who, where, dtype_name(x.dtype()));
    }
    return x.strings();
  } else {
    if (!is_integer(x.dtype())) {
      throw_error<DTypeError>("{}: expected int32 or int64 {}, got dtype {}", who, where, dtype_name(x.dtype()));
    }
    return x.to_vector<int64_t>();
  }
}

// Token counts gathered by adapt() (Keras's update_state): how often each token occurs,
// and for tf_idf in how many documents.
template <class Token>
class TokenCounter {
 public:
  struct Counts {
    int64_t tokens = 0;
    int64_t documents = 0;
  };

  explicit TokenCounter(bool count_documents) : count_documents_(count_documents) {}

  // One batch: a tensor (rank 0 or 1: one document; else one per row) or a RaggedTensor
  // in Tree form (one per row). `element` and `who` name it in errors.
  void update(const Tree& batch, int64_t element, const std::string& who) {
    const std::string where = fmt::format("data at element {} of the dataset", element);
    if (RaggedTensor::is_ragged(batch)) {
      const RaggedTensor rows = RaggedTensor::from_tree(batch);
      const auto values = token_values<Token>(rows.values(), who, where);
      const auto splits = rows.row_splits().to_vector<int64_t>();
      const int64_t inner = rows.values().dim(0) == 0 ? 1 : rows.values().numel() / rows.values().dim(0);
      for (size_t r = 0; r + 1 < splits.size(); ++r) {
        add_document(values, splits[r] * inner, splits[r + 1] * inner);
      }
      return;
    }
    if (!batch.is_tensor()) {
      throw_error<ValueError>("{}: adapt expected a tensor or a RaggedTensor as each dataset element, got {} at "
                              "element {}",
                              who, batch.to_string(), element);
    }
    const Tensor& x = batch.tensor();
    const auto values = token_values<Token>(x, who, where);
    const int64_t n = static_cast<int64_t>(values.size());
    if (x.rank() <= 1) {
      add_document(values, 0, n);
      return;
    }
    const int64_t rows = x.dim(0), per_row = rows == 0 ? 0 : n / rows;
    for (int64_t r = 0; r < rows; ++r) add_document(values, r * per_row, (r + 1) * per_row);
  }

  // Drops `token` (the mask and OOV tokens take no learned index).
  void remove(const Token& token) { counts_.erase(token); }
  size_t size() const { return counts_.size(); }
  int64_t documents() const { return documents_; }

  // The tokens by count, largest first, ties by the larger token (Keras's order).
  std::vector<std::pair<Token, Counts>> sorted() const {
    std::vector<std::pair<Token, Counts>> out(counts_.begin(), counts_.end());
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return a.second.tokens != b.second.tokens ? a.second.tokens > b.second.tokens : a.first > b.first;
    });
    return out;
  }

 private:
  template <class Values>
  void add_document(const Values& values, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) counts_[values[i]].tokens += 1;
    if (!count_documents_) return;
    ++documents_;
    std::unordered_set<Token> seen;
    for (int64_t i = begin; i < end; ++i) {
      if (seen.insert(values[i]).second) counts_[values[i]].documents += 1;
    }
  }

  bool count_documents_;
  std::unordered_map<Token, Counts> counts_;
  int64_t documents_ = 0;
};

}  // namespace chorus::layers::detail
