// WordTokenizer: whitespace-separated words looked up in a word vocabulary, unknown words
// to an OOV id — the tokenizer of the PyTorch BERT-MLM peer (shared/peers/bert_mlm.py) on
// already-tokenized WikiText. Immutable after construction: one instance may serve many
// threads.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chorus/core/ragged_tensor.h"
#include "chorus/core/tree.h"
#include "chorus/text/tokenizer_tensors.h"
#include "chorus/text/vocabulary.h"

namespace chorus::text {

struct WordVocabularyOptions {
  // First in the vocabulary, in this order (the peer's [PAD] [CLS] [SEP] [MASK] [UNK]).
  std::vector<std::string> reserved_tokens = {"[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"};
  // Keep at most this many tokens in all (reserved included); -1: every distinct word.
  int64_t max_size = -1;
};

// The reserved tokens, then every distinct word of the lines (WordTokenizer::split),
// most frequent first, ties in code point order — the peer's build_vocab. A word equal
// to a reserved token is not repeated.
std::vector<std::string> build_word_vocabulary(const std::function<std::optional<std::string>()>& next_line,
                                               const WordVocabularyOptions& options = {});
std::vector<std::string> build_word_vocabulary(const std::vector<std::string>& lines,
                                               const WordVocabularyOptions& options = {});

class WordTokenizer : public detail::TensorTokenizer<WordTokenizer> {
 public:
  // Throws ValueError if `oov_token` is not in the vocabulary.
  explicit WordTokenizer(Vocabulary vocabulary, std::string oov_token = "[UNK]");

  // Python's str.split(): runs separated by Unicode whitespace (the White_Space property
  // plus U+001C..U+001F, as str.isspace). Throws ValueError on invalid UTF-8.
  static void split(std::string_view text, const std::function<void(std::string_view word)>& on_word);

  std::vector<int32_t> tokenize(std::string_view text) const;
  void tokenize_into(std::string_view text, std::vector<int32_t>& out) const;
  // The words of `ids` joined by single spaces. Throws IndexError for an unknown id.
  std::string detokenize(const std::vector<int32_t>& ids) const;

  // String tensors in, ragged int32 ids out, and back (TensorTokenizer).
  using TensorTokenizer::detokenize;
  using TensorTokenizer::tokenize;

  int32_t vocabulary_size() const { return vocabulary_.size(); }
  const Vocabulary& vocabulary() const { return vocabulary_; }
  int32_t oov_id() const { return oov_id_; }

 private:
  friend class detail::TensorTokenizer<WordTokenizer>;
  static constexpr std::string_view kName = "WordTokenizer";
  int64_t dense_length() const { return 0; }

  Vocabulary vocabulary_;
  int32_t oov_id_;
};

}  // namespace chorus::text
