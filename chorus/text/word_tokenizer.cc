// Word-level tokenisation: split on whitespace, look each word up; no normalisation.
#include "chorus/text/word_tokenizer.h"

#include <algorithm>
#include <unordered_map>

#include "chorus/core/error.h"
#include "chorus/text/tokenizer_tensors.h"
#include "chorus/text/unicode.h"

namespace chorus::text {
namespace {

bool is_python_space(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  return is_whitespace(c);
}

}  // namespace

void WordTokenizer::split(std::string_view text, const std::function<void(std::string_view word)>& on_word) {
  size_t start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t here = pos;
    const auto byte = static_cast<unsigned char>(text[pos]);
    const char32_t c = byte < 0x80 ? (++pos, byte) : decode_utf8(text, pos);
    if (!is_python_space(c)) continue;
    if (here > start) on_word(text.substr(start, here - start));
    start = pos;
  }
  if (text.size() > start) on_word(text.substr(start));
}

std::vector<std::string> build_word_vocabulary(const std::function<std::optional<std::string>()>& next_line,
                                               const WordVocabularyOptions& options) {
  std::unordered_map<std::string, int64_t> counts;
  while (std::optional<std::string> line = next_line()) {
    WordTokenizer::split(*line, [&](std::string_view word) { ++counts[std::string(word)]; });
  }
  std::vector<std::pair<std::string, int64_t>> words(counts.begin(), counts.end());
  std::sort(words.begin(), words.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<std::string> vocab = options.reserved_tokens;
  for (auto& [word, count] : words) {
    if (options.max_size >= 0 && static_cast<int64_t>(vocab.size()) >= options.max_size) break;
    if (std::find(options.reserved_tokens.begin(), options.reserved_tokens.end(), word) == options.reserved_tokens.end()) {
      vocab.push_back(std::move(word));
    }
  }
  if (options.max_size >= 0 && static_cast<int64_t>(vocab.size()) > options.max_size) {
    vocab.resize(static_cast<size_t>(options.max_size));
  }
  return vocab;
}

std::vector<std::string> build_word_vocabulary(const std::vector<std::string>& lines,
                                               const WordVocabularyOptions& options) {
  return build_word_vocabulary(next_line_of(lines), options);
}

WordTokenizer::WordTokenizer(Vocabulary vocabulary, std::string oov_token) : vocabulary_(std::move(vocabulary)) {
  const auto oov = vocabulary_.find(oov_token);
  if (!oov) {
    throw_error<ValueError>("WordTokenizer: oov_token \"{}\" is not in the vocabulary {} ({} tokens)", oov_token,
                            vocabulary_.source(), vocabulary_.size());
  }
  oov_id_ = *oov;
}

void WordTokenizer::tokenize_into(std::string_view text, std::vector<int32_t>& out) const {
  split(text, [&](std::string_view word) { out.push_back(vocabulary_.find(word).value_or(oov_id_)); });
}

std::vector<int32_t> WordTokenizer::tokenize(std::string_view text) const {
  std::vector<int32_t> ids;
  tokenize_into(text, ids);
  return ids;
}

std::string WordTokenizer::detokenize(const std::vector<int32_t>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out.push_back(' ');
    out.append(vocabulary_.id_to_token(ids[i]));
  }
  return out;
}

}  // namespace chorus::text
