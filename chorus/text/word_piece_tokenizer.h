// WordPieceTokenizer: KerasNLP's WordPiece tokenizer (BERT's): pre-tokenise (pretokenizer.h),
// then split each word greedily, longest match first, into vocabulary pieces with "##"
// continuations. Immutable after construction: one instance may serve many threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chorus/core/ragged_tensor.h"
#include "chorus/core/tensor.h"
#include "chorus/core/tree.h"
#include "chorus/text/pretokenizer.h"
#include "chorus/text/tokenizer_tensors.h"
#include "chorus/text/vocabulary.h"

namespace chorus::text {

struct WordPieceTokenizerOptions {
  // When > 0, outputs are truncated or padded with id 0 to this length (dense). Default 0:
  // variable-length (ragged) outputs.
  int64_t sequence_length = 0;
  bool lowercase = true;       // NFKC + case folding per word (PretokenizeOptions)
  bool strip_accents = false;  // NFD, then drop \p{Mn}
  bool split = true;           // false: each input is one pre-split word
  bool split_on_cjk = true;    // isolate CJK ideographs
  // Marks a piece that continues a word ("##ing").
  std::string suffix_indicator = "##";
  // The token a word becomes when it cannot be split into pieces; must be in the vocabulary.
  std::string oov_token = "[UNK]";
};

class WordPieceTokenizer : public detail::TensorTokenizer<WordPieceTokenizer> {
 public:
  // A word longer than this many bytes becomes the OOV token (TF Text's max_bytes_per_word).
  static constexpr size_t kMaxBytesPerWord = 100;

  // Throws ValueError if options.oov_token is not in `vocabulary`, naming it, or if
  // sequence_length is negative.
  explicit WordPieceTokenizer(Vocabulary vocabulary, WordPieceTokenizerOptions options = {});
  WordPieceTokenizer(std::vector<std::string> tokens, WordPieceTokenizerOptions options = {})
      : WordPieceTokenizer(Vocabulary(std::move(tokens)), std::move(options)) {}
  // Reads the vocabulary file (Vocabulary::from_file: one token per line).
  static WordPieceTokenizer from_file(const std::string& path, WordPieceTokenizerOptions options = {});

  // The ids of `text`'s pieces; exactly sequence_length ids when that is set.
  // Throws ValueError on invalid UTF-8, naming the byte offset.
  std::vector<int32_t> tokenize(std::string_view text) const;
  // Per element; errors name the batch element.
  std::vector<std::vector<int32_t>> tokenize(const std::vector<std::string>& batch) const;
  // A (B, L) int32 tensor padded with 0: L = sequence_length, or the longest row when unset.
  Tensor tokenize_dense(const std::vector<std::string>& batch) const;
  // Appends `text`'s ids to `out`, without truncation or padding (the fast path).
  void tokenize_into(std::string_view text, std::vector<int32_t>& out) const;
  // The pieces as strings ("un", "##aff", "##able").
  std::vector<std::string> tokenize_to_pieces(std::string_view text) const;

  // The text of `ids`: pieces joined by spaces, a suffix piece glued to the one before
  // without its indicator. Throws IndexError for an id outside the vocabulary.
  std::string detokenize(const std::vector<int32_t>& ids) const;

  // String tensors in, int32 ids out (sequence_length of them when set), and back.
  using TensorTokenizer::detokenize;
  using TensorTokenizer::tokenize;

  int32_t vocabulary_size() const { return vocabulary_.size(); }
  const Vocabulary& vocabulary() const { return vocabulary_; }
  const std::string& id_to_token(int32_t id) const { return vocabulary_.id_to_token(id); }
  int32_t token_to_id(std::string_view token) const { return vocabulary_.token_to_id(token); }
  int32_t oov_id() const { return oov_id_; }
  const WordPieceTokenizerOptions& options() const { return options_; }

 private:
  friend class detail::TensorTokenizer<WordPieceTokenizer>;
  static constexpr std::string_view kName = "WordPieceTokenizer";
  int64_t dense_length() const { return options_.sequence_length; }
  // Appends the pieces of one pre-tokenised word, or the OOV id.
  void split_word(std::string_view word, std::vector<int32_t>& out) const;
  std::vector<int32_t> fit_length(std::vector<int32_t> ids) const;

  Vocabulary vocabulary_;
  WordPieceTokenizerOptions options_;
  PretokenizeOptions pretokenize_;
  TokenIndex prefixes_;  // pieces that may start a word
  TokenIndex suffixes_;  // continuation pieces, without the indicator
  size_t max_prefix_bytes_ = 0;
  size_t max_suffix_bytes_ = 0;
  int32_t oov_id_ = 0;
};

}  // namespace chorus::text
