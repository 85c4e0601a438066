// Greedy longest-match-first WordPiece (as TF Text's FastWordpieceTokenizer computes it):
// a word's pieces are looked up in two hash indexes, one for word-initial pieces and one
// for continuations stored without the "##", so no candidate string is ever built.
#include "chorus/text/word_piece_tokenizer.h"

#include <algorithm>

#include "chorus/core/creation.h"
#include "chorus/core/error.h"
#include "chorus/text/tokenizer_tensors.h"

namespace chorus::text {
namespace {

bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

WordPieceTokenizer::WordPieceTokenizer(Vocabulary vocabulary, WordPieceTokenizerOptions options)
    : vocabulary_(std::move(vocabulary)),
      options_(std::move(options)),
      pretokenize_{.lowercase = options_.lowercase,
                   .strip_accents = options_.strip_accents,
                   .split = options_.split,
                   .split_on_cjk = options_.split_on_cjk} {
  if (options_.sequence_length < 0) {
    throw_error<ValueError>("WordPieceTokenizer: expected sequence_length >= 0. Received: sequence_length={}",
                            options_.sequence_length);
  }
  const auto oov = vocabulary_.find(options_.oov_token);
  if (!oov) {
    throw_error<ValueError>("WordPieceTokenizer: oov_token \"{}\" is not in the vocabulary {} ({} tokens)",
                            options_.oov_token, vocabulary_.source(), vocabulary_.size());
  }
  oov_id_ = *oov;
  const std::string& suffix = options_.suffix_indicator;
  for (int32_t id = 0; id < vocabulary_.size(); ++id) {
    const std::string& token = vocabulary_.tokens()[static_cast<size_t>(id)];
    if (!suffix.empty() && token.size() > suffix.size() && token.starts_with(suffix)) {
      suffixes_.emplace(token.substr(suffix.size()), id);
      max_suffix_bytes_ = std::max(max_suffix_bytes_, token.size() - suffix.size());
    } else if (!token.empty()) {
      prefixes_.emplace(token, id);
      max_prefix_bytes_ = std::max(max_prefix_bytes_, token.size());
    }
  }
}

WordPieceTokenizer WordPieceTokenizer::from_file(const std::string& path, WordPieceTokenizerOptions options) {
  return WordPieceTokenizer(Vocabulary::from_file(path), std::move(options));
}

void WordPieceTokenizer::split_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > kMaxBytesPerWord) {
    out.push_back(oov_id_);
    return;
  }
  const size_t first = out.size();
  size_t start = 0;
  while (start < word.size()) {
    const TokenIndex& index = start == 0 ? prefixes_ : suffixes_;
    const size_t longest = start == 0 ? max_prefix_bytes_ : max_suffix_bytes_;
    size_t end = std::min(word.size(), start + longest);
    int32_t id = -1;
    for (; end > start; --end) {
      if (end < word.size() && is_continuation_byte(word[end])) continue;  // not a character boundary
      if (const auto it = index.find(word.substr(start, end - start)); it != index.end()) {
        id = it->second;
        break;
      }
    }
    if (id < 0) {  // some part has no piece: the whole word is out of vocabulary
      out.resize(first);
      out.push_back(oov_id_);
      return;
    }
    out.push_back(id);
    start = end;
  }
}

void WordPieceTokenizer::tokenize_into(std::string_view text, std::vector<int32_t>& out) const {
  pretokenize(text, pretokenize_, [&](std::string_view word) { split_word(word, out); });
}

std::vector<int32_t> WordPieceTokenizer::fit_length(std::vector<int32_t> ids) const {
  if (options_.sequence_length > 0) ids.resize(static_cast<size_t>(options_.sequence_length), 0);
  return ids;
}

std::vector<int32_t> WordPieceTokenizer::tokenize(std::string_view text) const {
  std::vector<int32_t> ids;
  tokenize_into(text, ids);
  return fit_length(std::move(ids));
}

std::vector<std::vector<int32_t>> WordPieceTokenizer::tokenize(const std::vector<std::string>& batch) const {
  std::vector<std::vector<int32_t>> out;
  out.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    try {
      out.push_back(tokenize(batch[i]));
    } catch (const ValueError& e) {
      throw_error<ValueError>("WordPieceTokenizer: batch element {}: {}", i, e.what());
    }
  }
  return out;
}

Tensor WordPieceTokenizer::tokenize_dense(const std::vector<std::string>& batch) const {
  const std::vector<std::vector<int32_t>> rows = tokenize(batch);
  size_t width = static_cast<size_t>(options_.sequence_length);
  if (width == 0) {
    for (const auto& row : rows) width = std::max(width, row.size());
  }
  std::vector<int32_t> flat(rows.size() * width, 0);
  for (size_t r = 0; r < rows.size(); ++r) {
    std::copy_n(rows[r].begin(), std::min(width, rows[r].size()), flat.begin() + static_cast<ptrdiff_t>(r * width));
  }
  return from_values(flat, Shape{static_cast<int64_t>(rows.size()), static_cast<int64_t>(width)});
}

std::vector<std::string> WordPieceTokenizer::tokenize_to_pieces(std::string_view text) const {
  std::vector<std::string> pieces;
  for (const int32_t id : tokenize(text)) pieces.push_back(vocabulary_.id_to_token(id));
  return pieces;
}

std::string WordPieceTokenizer::detokenize(const std::vector<int32_t>& ids) const {
  const std::string& suffix = options_.suffix_indicator;
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string& piece = vocabulary_.id_to_token(ids[i]);
    if (i > 0 && !suffix.empty() && piece.size() > suffix.size() && piece.starts_with(suffix)) {
      out.append(piece, suffix.size());
    } else {
      if (i > 0) out.push_back(' ');
      out.append(piece);
    }
  }
  return out;
}

}  // namespace chorus::text
