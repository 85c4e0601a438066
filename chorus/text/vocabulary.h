// Vocabulary: an ordered list of distinct tokens (id = position) with a hash index, as the
// tokenizers share it. Immutable after construction, so it is thread-safe to read.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace chorus::text {

// std::hash over string_view so lookups by string_view need no temporary std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using TokenIndex = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// The line source the vocabulary learners read (compute_word_piece_vocabulary,
// build_word_vocabulary): each call returns the next line, nullopt at the end. This one
// reads `lines`, which must outlive it; one thread at a time.
std::function<std::optional<std::string>()> next_line_of(const std::vector<std::string>& lines);

class Vocabulary {
 public:
  // `tokens` in id order. `source` names them in errors (a file name; "<list>" by default). Throws ValueError
  // if the list is empty, a token is not valid UTF-8, or a token repeats (naming both
  // lines, 1-based, as in a vocabulary file).
  explicit Vocabulary(std::vector<std::string> tokens, std::string_view source = "<list>");

  // One token per line, UTF-8, trailing whitespace (and "\r") stripped, as KerasNLP reads
  // vocabulary files. Throws IOError naming the file if it cannot be read, and the errors
  // above with the file's name.
  static Vocabulary from_file(const std::string& path);

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  const std::vector<std::string>& tokens() const { return tokens_; }
  // The id of `token`, or nullopt.
  std::optional<int32_t> find(std::string_view token) const {
    const auto it = index_.find(token);
    return it == index_.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }
  bool contains(std::string_view token) const { return index_.find(token) != index_.end(); }
  // Throws ValueError naming the token and the source when it is absent.
  int32_t token_to_id(std::string_view token) const;
  // Throws IndexError when id is outside [0, size()).
  const std::string& id_to_token(int32_t id) const;
  const std::string& source() const { return source_; }

 private:
  std::vector<std::string> tokens_;
  TokenIndex index_;
  std::string source_;
};

}  // namespace chorus::text
