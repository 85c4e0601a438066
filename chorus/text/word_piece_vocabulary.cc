// TF Text's bottom-up WordPiece learner, step for step (wordpiece_tokenizer_learner_lib.py):
// filter words, binary-search a count threshold, and for each threshold run
// num_iterations passes that count the substrings starting at the greedy-split boundaries
// of the previous pass, keeping those at or above the threshold, longest first, and
// discounting their prefixes. Words are handled as UTF-32 so lengths are in characters.
#include "chorus/text/word_piece_vocabulary.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "chorus/core/error.h"
#include "chorus/text/pretokenizer.h"
#include "chorus/text/unicode.h"

namespace chorus::text {
namespace {

using WordCounts = std::vector<std::pair<std::u32string, int64_t>>;
// Hashes u32string_view too, so substrings are looked up without allocating.
struct U32Hash {
  using is_transparent = void;
  size_t operator()(std::u32string_view s) const noexcept { return std::hash<std::u32string_view>{}(s); }
};
using TokenCounts = std::unordered_map<std::u32string, int64_t, U32Hash, std::equal_to<>>;

void add_count(TokenCounts& counts, std::u32string_view token, int64_t count) {
  if (const auto it = counts.find(token); it != counts.end()) {
    it->second += count;
  } else {
    counts.emplace(std::u32string(token), count);
  }
}

struct Learner {
  const WordPieceVocabularyOptions& options;
  std::u32string joiner;

  // The characters of the kept words plus their joined forms, each with count 1 unless present.
  void ensure_chars(const std::set<char32_t>& chars, TokenCounts& tokens) const {
    for (const char32_t c : chars) {
      tokens.try_emplace(std::u32string(1, c), 1);
      tokens.try_emplace(joiner + c, 1);
    }
  }

  // The end offsets of the greedy longest-match split of `word` over `tokens`, or empty
  // when some part has no token.
  std::vector<size_t> split_indices(const std::u32string& word, const TokenCounts& tokens) const {
    std::vector<size_t> indices;
    size_t start = 0;
    std::u32string candidate;
    while (start < word.size()) {
      size_t end = word.size();
      for (; end > start; --end) {
        candidate.assign(start > 0 ? joiner : std::u32string());
        candidate.append(word, start, end - start);
        if (tokens.contains(candidate)) break;
      }
      if (end == start) return {};
      indices.push_back(end);
      start = end;
    }
    return indices;
  }

  // One counting pass: the count of every substring starting at a split boundary.
  std::vector<TokenCounts> count_substrings(const WordCounts& words, const TokenCounts& current, bool first) const {
    std::vector<TokenCounts> by_length(static_cast<size_t>(options.max_token_length) + 1);
    std::u32string token;
    for (const auto& [word, count] : words) {
      std::vector<size_t> indices;
      if (first) {
        for (size_t i = 1; i <= word.size(); ++i) indices.push_back(i);
      } else {
        indices = split_indices(word, current);
        if (indices.empty()) continue;
      }
      size_t start = 0;
      for (const size_t index : indices) {
        for (size_t end = start + 1; end <= word.size(); ++end) {
          token.assign(start > 0 ? joiner : std::u32string());
          token.append(word, start, end - start);
          add_count(by_length[end - start], token, count);
        }
        start = index;
      }
    }
    return by_length;
  }

  // Keeps the substrings counted >= thresh, longest first, taking each one's count off
  // its prefixes (whether kept or not, as TF Text does).
  TokenCounts select(std::vector<TokenCounts>& by_length, int64_t thresh) const {
    TokenCounts next;
    const size_t jl = joiner.size();
    for (size_t length = by_length.size() - 1; length >= 1; --length) {
      for (const auto& [token, count] : by_length[length]) {
        if (count >= thresh) next[token] = count;
        const bool joined = token.size() > length;
        for (size_t i = 1; i < length; ++i) {
          const std::u32string_view prefix = std::u32string_view(token).substr(0, joined ? i + jl : i);
          if (auto it = by_length[i].find(prefix); it != by_length[i].end()) it->second -= count;
        }
      }
    }
    return next;
  }

  // The first pass counts every substring whatever the threshold: computed once.
  std::vector<TokenCounts> first_pass;

  std::vector<std::string> learn_with_thresh(const WordCounts& words, int64_t thresh) {
    std::set<char32_t> chars;
    for (const auto& [word, count] : words) chars.insert(word.begin(), word.end());
    TokenCounts current;
    ensure_chars(chars, current);
    for (int iteration = 0; iteration < options.num_iterations; ++iteration) {
      if (iteration == 0 && first_pass.empty()) first_pass = count_substrings(words, current, true);
      std::vector<TokenCounts> by_length = iteration == 0 ? first_pass : count_substrings(words, current, false);
      current = select(by_length, thresh);
      ensure_chars(chars, current);
    }
    return final_vocabulary(chars, current);
  }

  std::vector<std::string> final_vocabulary(const std::set<char32_t>& chars, const TokenCounts& tokens) const {
    std::vector<std::pair<std::u32string, int64_t>> sorted(tokens.begin(), tokens.end());
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    std::vector<std::string> vocab;
    std::unordered_set<std::string> seen;
    auto add = [&](std::string token) {
      if (seen.insert(token).second) vocab.push_back(std::move(token));
    };
    for (const std::string& token : options.reserved_tokens) add(token);
    for (const char32_t c : chars) add(to_utf8(std::u32string(1, c)));
    for (const auto& [token, count] : sorted) add(to_utf8(token));
    return vocab;
  }

  std::vector<std::string> binary_search(const WordCounts& words, int64_t lower, int64_t upper) {
    const auto target = static_cast<double>(options.vocabulary_size);
    const double slack = std::max(0.0, options.slack_ratio * target);
    while (true) {
      const int64_t thresh = (upper + lower) / 2;
      std::vector<std::string> vocab = learn_with_thresh(words, thresh);
      const auto size = static_cast<double>(vocab.size());
      const bool within_slack = size <= target && target - size <= slack;
      if (within_slack || lower >= upper || thresh <= 1) return vocab;
      if (size > target) {
        lower = thresh + 1;
      } else {
        upper = thresh - 1;
      }
    }
  }
};

// The max_unique_chars most frequent characters (ties by code point).
std::set<char32_t> allowed_chars(const WordCounts& words, int64_t max_unique_chars) {
  std::map<char32_t, int64_t> counts;
  for (const auto& [word, count] : words) {
    for (const char32_t c : word) counts[c] += count;
  }
  std::vector<std::pair<char32_t, int64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::set<char32_t> allowed;
  for (size_t i = 0; i < sorted.size() && static_cast<int64_t>(i) < max_unique_chars; ++i) allowed.insert(sorted[i].first);
  return allowed;
}

}  // namespace

std::vector<std::string> learn_word_piece_vocabulary(const std::map<std::string, int64_t>& word_counts,
                                                     const WordPieceVocabularyOptions& options) {
  if (options.vocabulary_size <= 0) {
    throw_error<ValueError>("compute_word_piece_vocabulary: expected vocabulary_size > 0. Received: vocabulary_size={}",
                            options.vocabulary_size);
  }
  if (word_counts.empty()) throw_error<ValueError>("compute_word_piece_vocabulary: the input holds no words");
  int64_t max_count = 0;
  int64_t min_count = INT64_MAX;
  WordCounts kept;  // get_input_words: drop long words and reserved tokens
  for (const auto& [word, count] : word_counts) {
    max_count = std::max(max_count, count);
    min_count = std::min(min_count, count);
    std::u32string chars = to_utf32(word);
    const bool reserved = std::find(options.reserved_tokens.begin(), options.reserved_tokens.end(), word) !=
                          options.reserved_tokens.end();
    if (static_cast<int64_t>(chars.size()) <= options.max_token_length && !reserved) kept.emplace_back(std::move(chars), count);
  }
  const int64_t upper = std::min(max_count, options.upper_threshold);
  const int64_t lower = std::max(min_count, options.lower_threshold);
  const std::set<char32_t> allowed = allowed_chars(kept, options.max_unique_chars);
  std::stable_sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  WordCounts filtered;
  for (auto& entry : kept) {
    if (options.max_input_tokens != -1 && static_cast<int64_t>(filtered.size()) >= options.max_input_tokens) break;
    if (std::all_of(entry.first.begin(), entry.first.end(), [&](char32_t c) { return allowed.contains(c); })) {
      filtered.push_back(std::move(entry));
    }
  }
  Learner learner{options, to_utf32(options.suffix_indicator), {}};
  std::vector<std::string> vocab = learner.binary_search(filtered, lower, upper);
  if (static_cast<int64_t>(vocab.size()) > options.vocabulary_size) vocab.resize(static_cast<size_t>(options.vocabulary_size));
  return vocab;
}

std::vector<std::string> compute_word_piece_vocabulary(const std::function<std::optional<std::string>()>& next_line,
                                                       const WordPieceVocabularyOptions& options) {
  const PretokenizeOptions pretokenize_options{.lowercase = options.lowercase,
                                               .strip_accents = options.strip_accents,
                                               .split = options.split,
                                               .split_on_cjk = options.split_on_cjk};
  std::unordered_map<std::string, int64_t> counts;
  int64_t line_number = 0;
  while (std::optional<std::string> line = next_line()) {
    ++line_number;
    try {
      pretokenize(*line, pretokenize_options, [&](std::string_view word) { ++counts[std::string(word)]; });
    } catch (const ValueError& e) {
      throw_error<ValueError>("compute_word_piece_vocabulary: line {}: {}", line_number, e.what());
    }
  }
  return learn_word_piece_vocabulary(std::map<std::string, int64_t>(counts.begin(), counts.end()), options);
}

std::vector<std::string> compute_word_piece_vocabulary(const std::vector<std::string>& lines,
                                                       const WordPieceVocabularyOptions& options) {
  size_t next = 0;
  return compute_word_piece_vocabulary(
      [&]() -> std::optional<std::string> {
        if (next == lines.size()) return std::nullopt;
        return lines[next++];
      },
      options);
}

}  // namespace chorus::text
