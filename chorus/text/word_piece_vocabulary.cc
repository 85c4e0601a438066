// TF Text's bottom-up WordPiece learner, step for step (wordpiece_tokenizer_learner_lib.py):
// filter words, binary-search a count threshold, and for each threshold run
// num_iterations passes that count the substrings starting at the greedy-split boundaries
// of the previous pass, keeping those at or above the threshold, longest first, and
// discounting their prefixes. Words are handled as UTF-32 so lengths are in characters.
//
// Speed: every substring of every word is interned once, up front (a trie node per
// distinct token string, a table of nodes per word), and a pass need only count the
// substrings that end their word (see count_pass), so the passes (num_iterations for each
// of the ~20 thresholds searched) are integer array work, with no strings and no hashing.
#include "chorus/text/word_piece_vocabulary.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "chorus/core/error.h"
#include "chorus/text/pretokenizer.h"
#include "chorus/text/unicode.h"
#include "chorus/text/vocabulary.h"

namespace chorus::text {
namespace {

using WordCounts = std::vector<std::pair<std::u32string, int64_t>>;

// Every token string that can occur, as a trie: a node per distinct string, where a
// continuation piece's string is the joiner followed by its characters (so "##ab" reached
// from a word "##ab" and the continuation "ab" are one string, as in TF Text's dicts).
// Children are found in an open-addressing table keyed by (parent, character): interning
// every substring of a large corpus is millions of lookups.
class TokenTrie {
 public:
  static constexpr int32_t kRoot = 0;  // the empty string

  // The node of `node`'s string followed by `c`, added if new.
  int32_t child(int32_t node, char32_t c) {
    const uint64_t key = (static_cast<uint64_t>(node) << 32) | c;
    size_t slot = home_slot(key);
    for (; slots_[slot].child != kEmpty; slot = (slot + 1) & (slots_.size() - 1)) {
      if (slots_[slot].key == key) return slots_[slot].child;
    }
    const int32_t added = size();
    parent_.push_back(node);
    last_char_.push_back(c);
    depth_.push_back(depth_[node] + 1);
    slots_[slot] = {key, added};
    if (2 * parent_.size() > slots_.size()) grow();
    return added;
  }
  int32_t size() const { return static_cast<int32_t>(parent_.size()); }
  int32_t parent(int32_t node) const { return parent_[node]; }
  int32_t depth(int32_t node) const { return depth_[node]; }
  std::u32string string(int32_t node) const {
    std::u32string s(depth_[node], U'\0');
    for (; node != kRoot; node = parent_[node]) s[depth_[node] - 1] = last_char_[node];
    return s;
  }

 private:
  static constexpr int32_t kEmpty = -1;
  struct Slot {
    uint64_t key = 0;
    int32_t child = kEmpty;
  };
  // Fibonacci hashing: the product's top bits depend on every bit of the key.
  size_t home_slot(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ULL) >> slot_shift_; }
  void grow() {
    --slot_shift_;
    std::vector<Slot> old(2 * slots_.size());
    old.swap(slots_);
    for (const Slot& entry : old) {
      if (entry.child == kEmpty) continue;
      size_t slot = home_slot(entry.key);
      while (slots_[slot].child != kEmpty) slot = (slot + 1) & (slots_.size() - 1);
      slots_[slot] = entry;
    }
  }

  std::vector<int32_t> parent_{-1};
  std::vector<char32_t> last_char_{U'\0'};
  std::vector<int32_t> depth_{0};  // in characters
  std::vector<Slot> slots_ = std::vector<Slot>(1024);  // 2^(64 - slot_shift_) of them
  int slot_shift_ = 54;
};

// A set of token strings (trie nodes) with their counts: TF Text's current tokens.
class TokenSet {
 public:
  TokenSet() = default;
  explicit TokenSet(int32_t num_nodes) : count_(num_nodes), present_(num_nodes) {}
  bool contains(int32_t node) const { return present_[node]; }
  void set(int32_t node, int64_t count) {
    if (!present_[node]) {
      present_[node] = 1;
      members_.push_back(node);
    }
    count_[node] = count;
  }
  void clear() {
    for (const int32_t node : members_) present_[node] = 0;
    members_.clear();
  }
  int64_t count(int32_t node) const { return count_[node]; }
  const std::vector<int32_t>& members() const { return members_; }

 private:
  std::vector<int64_t> count_;
  std::vector<uint8_t> present_;
  std::vector<int32_t> members_;
};

// A substring of a word as TF Text's learner counts it: its string (trie node) plus whether
// it continues a word. The two are counted apart (TF Text buckets by length in characters,
// and a continuation's string is longer than its characters) unless the joiner is empty.
// Encoded as node * 2 + continues.
using Piece = int32_t;
using PieceCounts = std::vector<std::pair<Piece, int64_t>>;

class Learner {
 public:
  Learner(const WordPieceVocabularyOptions& options, const WordCounts& words);
  std::vector<std::string> binary_search(int64_t lower, int64_t upper);

 private:
  struct Word {
    int64_t count;
    size_t size;    // in characters
    size_t substrings;  // offset in substrings_ of its [start, end) table, rows by start
    size_t endings;     // offset in endings_ of its [start, size) entries
  };
  // The trie node of word[start, end), with the joiner before it when start > 0.
  int32_t substring(const Word& word, size_t start, size_t end) const {
    return substrings_[word.substrings + start * word.size - start * (start - 1) / 2 + (end - start - 1)];
  }
  static int32_t node(Piece piece) { return piece >> 1; }
  int32_t length(Piece piece) const { return trie_.depth(node(piece)) - (piece & 1 ? joiner_length_ : 0); }

  void index_word(const std::u32string& chars, int64_t count);
  void index_endings();
  bool split_boundaries(const Word& word, const TokenSet& tokens, std::vector<size_t>& starts) const;
  PieceCounts count_pass(const TokenSet* previous);
  void select(const PieceCounts& counts, int64_t thresh, TokenSet& next) const;
  void add_chars(TokenSet& tokens) const;
  std::vector<std::string> learn_with_thresh(int64_t thresh);
  std::vector<std::string> final_vocabulary(const TokenSet& tokens) const;

  const WordPieceVocabularyOptions& options_;
  TokenTrie trie_;
  int32_t joiner_length_ = 0;
  int32_t joined_root_ = TokenTrie::kRoot;  // the joiner's node: continuations start there
  std::vector<Word> words_;
  std::vector<int32_t> substrings_;
  // The word-final pieces, the only ones count_pass counts, numbered densely so that
  // counting touches a small array: endings_ holds each (word, start)'s number.
  std::vector<int32_t> endings_;
  std::vector<Piece> ending_pieces_;
  std::set<char32_t> chars_;  // of the kept words, in code point order
  std::vector<std::pair<int32_t, int32_t>> char_nodes_;  // each char's and "##" char's node
  PieceCounts first_pass_;  // every offset is a boundary, whatever the threshold: computed once
  std::vector<int32_t> slot_;  // count_pass's scratch: an ending's index in its result, or -1
  TokenSet current_;  // learn_with_thresh's tokens after the last pass, and the next ones
  TokenSet next_;
};

Learner::Learner(const WordPieceVocabularyOptions& options, const WordCounts& words) : options_(options) {
  for (const char32_t c : to_utf32(options.suffix_indicator)) joined_root_ = trie_.child(joined_root_, c);
  joiner_length_ = trie_.depth(joined_root_);
  for (const auto& [chars, count] : words) {
    index_word(chars, count);
    chars_.insert(chars.begin(), chars.end());
  }
  for (const char32_t c : chars_) {
    char_nodes_.emplace_back(trie_.child(TokenTrie::kRoot, c), trie_.child(joined_root_, c));
  }
  index_endings();
  slot_.assign(ending_pieces_.size(), -1);
  current_ = TokenSet(trie_.size());
  next_ = TokenSet(trie_.size());
  first_pass_ = count_pass(nullptr);
}

// Interns the word's substrings and records their nodes, row by row of start offsets.
void Learner::index_word(const std::u32string& chars, int64_t count) {
  words_.push_back({count, chars.size(), substrings_.size(), 0});
  for (size_t start = 0; start < chars.size(); ++start) {
    int32_t node = start > 0 ? joined_root_ : TokenTrie::kRoot;
    for (size_t end = start + 1; end <= chars.size(); ++end) {
      node = trie_.child(node, chars[end - 1]);
      substrings_.push_back(node);
    }
  }
}

void Learner::index_endings() {
  std::vector<int32_t> number(2 * static_cast<size_t>(trie_.size()), -1);
  for (Word& word : words_) {
    word.endings = endings_.size();
    for (size_t start = 0; start < word.size; ++start) {
      const Piece p = substring(word, start, word.size) * 2 + (start > 0 && joiner_length_ > 0);
      if (number[p] < 0) {
        number[p] = static_cast<int32_t>(ending_pieces_.size());
        ending_pieces_.push_back(p);
      }
      endings_.push_back(number[p]);
    }
  }
}

// The start offsets of the greedy longest-match split of `word` over `tokens`; false
// when some part has no token.
bool Learner::split_boundaries(const Word& word, const TokenSet& tokens, std::vector<size_t>& starts) const {
  starts.clear();
  for (size_t start = 0; start < word.size;) {
    size_t end = word.size;
    while (end > start && !tokens.contains(substring(word, start, end))) --end;
    if (end == start) return false;
    starts.push_back(start);
    start = end;
  }
  return !starts.empty();
}

// One counting pass. TF Text counts every substring starting at a split boundary of the
// previous pass (at every offset in the first), then, longest first, takes each one's
// count off all its proper prefixes. What a substring keeps is the count of its
// occurrences that run to the end of their word: each counted occurrence of t begins
// exactly one such occurrence, of t or of a longer substring whose count is taken off t,
// which (by induction from the longest) is that longer one's count of word-final
// occurrences. So only word-final substrings are counted here; the others keep 0.
PieceCounts Learner::count_pass(const TokenSet* previous) {
  PieceCounts counts;
  std::vector<size_t> starts;
  for (const Word& word : words_) {
    if (previous == nullptr) {
      starts.resize(word.size);
      for (size_t i = 0; i < word.size; ++i) starts[i] = i;
    } else if (!split_boundaries(word, *previous, starts)) {
      continue;
    }
    for (const size_t start : starts) {
      const int32_t ending = endings_[word.endings + start];
      if (slot_[ending] < 0) {
        slot_[ending] = static_cast<int32_t>(counts.size());
        counts.emplace_back(ending_pieces_[ending], 0);
      }
      counts[slot_[ending]].second += word.count;
    }
  }
  std::fill(slot_.begin(), slot_.end(), -1);
  return counts;
}

// Keeps the pieces whose count is >= thresh. A string counted both as a word start and as
// a continuation (a word starting with the joiner) keeps the continuation's count: TF Text
// visits the shorter continuation later and overwrites.
void Learner::select(const PieceCounts& counts, int64_t thresh, TokenSet& next) const {
  next.clear();
  auto keep = [&](Piece p, int64_t count) {
    if (count >= thresh && ((p & 1) || !next.contains(node(p)))) next.set(node(p), count);
  };
  for (const auto& [p, count] : counts) keep(p, count);
  if (thresh > 0) return;
  // A threshold <= 0 also keeps the substrings counted only as prefixes, with 0.
  std::vector<uint8_t> seen(2 * static_cast<size_t>(trie_.size()));
  for (const auto& [p, count] : counts) seen[p] = 1;
  for (const auto& [p, count] : counts) {
    for (Piece prefix = p; length(prefix) > 1;) {
      prefix = trie_.parent(node(prefix)) * 2 + (prefix & 1);
      if (seen[prefix]) break;
      seen[prefix] = 1;
      keep(prefix, 0);
    }
  }
}

// Every character of the kept words and its continuation form, with count 1 unless present.
void Learner::add_chars(TokenSet& tokens) const {
  for (const auto& [start_node, joined_node] : char_nodes_) {
    if (!tokens.contains(start_node)) tokens.set(start_node, 1);
    if (!tokens.contains(joined_node)) tokens.set(joined_node, 1);
  }
}

std::vector<std::string> Learner::learn_with_thresh(int64_t thresh) {
  current_.clear();
  add_chars(current_);
  for (int iteration = 0; iteration < options_.num_iterations; ++iteration) {
    select(iteration == 0 ? first_pass_ : count_pass(&current_), thresh, next_);
    add_chars(next_);
    std::swap(current_, next_);
  }
  return final_vocabulary(current_);
}

// Reserved tokens, characters in code point order, then the tokens by count (ties by code
// points), each once.
std::vector<std::string> Learner::final_vocabulary(const TokenSet& tokens) const {
  std::vector<std::pair<std::u32string, int64_t>> sorted;
  sorted.reserve(tokens.members().size());
  for (const int32_t node : tokens.members()) sorted.emplace_back(trie_.string(node), tokens.count(node));
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<std::string> vocab;
  std::unordered_set<std::string> seen;
  auto add = [&](std::string token) {
    if (seen.insert(token).second) vocab.push_back(std::move(token));
  };
  for (const std::string& token : options_.reserved_tokens) add(token);
  for (const char32_t c : chars_) add(to_utf8(std::u32string(1, c)));
  for (const auto& [token, count] : sorted) add(to_utf8(token));
  return vocab;
}

std::vector<std::string> Learner::binary_search(int64_t lower, int64_t upper) {
  const auto target = static_cast<double>(options_.vocabulary_size);
  const double slack = std::max(0.0, options_.slack_ratio * target);
  while (true) {
    const int64_t thresh = (upper + lower) / 2;
    std::vector<std::string> vocab = learn_with_thresh(thresh);
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
  Learner learner(options, filtered);
  std::vector<std::string> vocab = learner.binary_search(lower, upper);
  if (static_cast<int64_t>(vocab.size()) > options.vocabulary_size) vocab.resize(static_cast<size_t>(options.vocabulary_size));
  return vocab;
}

std::vector<std::string> compute_word_piece_vocabulary(const std::function<std::optional<std::string>()>& next_line,
                                                       const WordPieceVocabularyOptions& options) {
  const PretokenizeOptions pretokenize_options{.lowercase = options.lowercase,
                                               .strip_accents = options.strip_accents,
                                               .split = options.split,
                                               .split_on_cjk = options.split_on_cjk};
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> counts;
  int64_t line_number = 0;
  while (std::optional<std::string> line = next_line()) {
    ++line_number;
    try {
      pretokenize(*line, pretokenize_options, [&](std::string_view word) {
        if (const auto it = counts.find(word); it != counts.end()) {
          ++it->second;
        } else {
          counts.emplace(word, 1);
        }
      });
    } catch (const ValueError& e) {
      throw_error<ValueError>("compute_word_piece_vocabulary: line {}: {}", line_number, e.what());
    }
  }
  return learn_word_piece_vocabulary(std::map<std::string, int64_t>(counts.begin(), counts.end()), options);
}

std::vector<std::string> compute_word_piece_vocabulary(const std::vector<std::string>& lines,
                                                       const WordPieceVocabularyOptions& options) {
  return compute_word_piece_vocabulary(next_line_of(lines), options);
}

}  // namespace chorus::text
