// Vocabulary construction and file loading; all validation happens here once.
#include "chorus/text/vocabulary.h"

#include <fstream>

#include "chorus/core/error.h"
#include "chorus/text/unicode.h"

namespace chorus::text {

std::function<std::optional<std::string>()> next_line_of(const std::vector<std::string>& lines) {
  return [&lines, next = size_t{0}]() mutable -> std::optional<std::string> {
    if (next == lines.size()) return std::nullopt;
    return lines[next++];
  };
}

Vocabulary::Vocabulary(std::vector<std::string> tokens, std::string_view source)
    : tokens_(std::move(tokens)), source_(source) {
  if (tokens_.empty()) throw_error<ValueError>("{}: expected at least one token, got an empty vocabulary", source_);
  index_.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (!is_valid_utf8(tokens_[i])) throw_error<ValueError>("{}:{}: token is not valid UTF-8", source_, i + 1);
    const auto [it, inserted] = index_.emplace(tokens_[i], static_cast<int32_t>(i));
    if (!inserted) {
      throw_error<ValueError>("{}:{}: duplicate token \"{}\", first seen on line {}", source_, i + 1, tokens_[i],
                              it->second + 1);
    }
  }
}

Vocabulary Vocabulary::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error<IOError>("{}: cannot open vocabulary file", path);
  std::vector<std::string> tokens;
  std::string line;
  while (std::getline(in, line)) {
    size_t end = line.size();
    while (end > 0 && (line[end - 1] == ' ' || line[end - 1] == '\t' || line[end - 1] == '\r' ||
                       line[end - 1] == '\f' || line[end - 1] == '\v')) {
      --end;
    }
    line.resize(end);
    tokens.push_back(std::move(line));
  }
  if (in.bad()) throw_error<IOError>("{}: read failed after {} lines", path, tokens.size());
  return Vocabulary(std::move(tokens), path);
}

int32_t Vocabulary::token_to_id(std::string_view token) const {
  const auto id = find(token);
  if (!id) throw_error<ValueError>("{}: token \"{}\" is not in the vocabulary ({} tokens)", source_, token, size());
  return *id;
}

const std::string& Vocabulary::id_to_token(int32_t id) const {
  if (id < 0 || id >= size()) throw_error<IndexError>("{}: id {} out of range [0, {})", source_, id, size());
  return tokens_[static_cast<size_t>(id)];
}

}  // namespace chorus::text
