// Tests for chorus/text/word_piece_vocabulary.h: TF Text's learner traced by hand on a
// one-word corpus, its properties on a synthetic corpus, and agreement with a literal
// transcription of TF Text's learn() on random small corpora and options.
#include "chorus/text/word_piece_vocabulary.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "chorus/text/unicode.h"
#include "chorus/text/word_piece_tokenizer.h"
#include "chorus/text/word_tokenizer.h"
#include "tests/testing/test_names.h"

namespace chorus::text {
namespace {

using namespace testing::test_names;

// "ab" x 20. Thresholds are searched in [max(min count, 10), min(max count, 1e7)] = [10, 20];
// the first, 15, keeps "ab" (20) and "##b" (20) in pass 0; from pass 1 on, "ab" splits as
// one piece, so only "ab" is counted, and "a" loses its 20 to "ab". Every char and ##char
// is added with count 1. Final order: reserved, chars, then by count and code point.
TEST(WordPieceVocabularyTest, TracesTheLearnerByHand) {
  const std::vector<std::string> lines(20, "ab");
  EXPECT_THAT(compute_word_piece_vocabulary(lines, {.vocabulary_size = 10}),
              ElementsAre("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]", "a", "b", "ab", "##a", "##b"));
  // A target of 8 drives the threshold up to 20, where the size is still 10: cut to 8.
  EXPECT_THAT(compute_word_piece_vocabulary(lines, {.vocabulary_size = 8}),
              ElementsAre("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]", "a", "b", "ab"));
}

TEST(WordPieceVocabularyTest, ReservedTokensComeFirstInTheirOrder) {
  const std::vector<std::string> lines(20, "ab");
  EXPECT_THAT(compute_word_piece_vocabulary(lines, {.vocabulary_size = 7, .reserved_tokens = {"<s>", "<unk>"}}),
              ElementsAre("<s>", "<unk>", "a", "b", "ab", "##a", "##b"));
}

// A corpus of made-up words over ten syllables, Zipf-distributed.
std::vector<std::string> synthetic_corpus(int lines, uint32_t seed) {
  const std::vector<std::string> syllables{"ka", "to", "mi", "re", "su", "no", "ha", "li", "po", "de", "\u00e9"};
  std::mt19937 rng(seed);
  std::vector<std::string> words;
  for (int w = 0; w < 3000; ++w) {
    std::string word;
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int s = 0; s < n; ++s) word += syllables[rng() % syllables.size()];
    words.push_back(word);
  }
  std::vector<double> weights;
  for (size_t r = 0; r < words.size(); ++r) weights.push_back(1.0 / static_cast<double>(r + 1));
  std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
  std::vector<std::string> out;
  for (int l = 0; l < lines; ++l) {
    std::string line;
    for (int k = 0; k < 12; ++k) line += (k ? " " : "") + words[pick(rng)];
    out.push_back(line);
  }
  return out;
}

TEST(WordPieceVocabularyTest, LearnsAVocabularyNearTheTargetSize) {
  const std::vector<std::string> corpus = synthetic_corpus(4000, 7);
  const int64_t target = 300;
  const std::vector<std::string> vocab = compute_word_piece_vocabulary(corpus, {.vocabulary_size = target});
  EXPECT_LE(static_cast<int64_t>(vocab.size()), target);
  EXPECT_GE(static_cast<double>(vocab.size()), 0.95 * static_cast<double>(target));
  EXPECT_THAT(std::vector<std::string>(vocab.begin(), vocab.begin() + 5),
              ElementsAre("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"));
  // Every character of the corpus, and its continuation form, is a token.
  const std::set<std::string> tokens(vocab.begin(), vocab.end());
  EXPECT_EQ(tokens.size(), vocab.size());  // no duplicates
  for (const std::string& line : corpus) {
    for (const char32_t c : to_utf32(line)) {
      if (c == U' ') continue;
      const std::string ch = to_utf8(std::u32string(1, c));
      EXPECT_TRUE(tokens.contains(ch)) << ch;
      EXPECT_TRUE(tokens.contains("##" + ch)) << ch;
    }
  }
}

TEST(WordPieceVocabularyTest, FewerUnknownsThanAWordVocabularyOfTheSameSize) {
  const std::vector<std::string> corpus = synthetic_corpus(4000, 11);
  const std::vector<std::string> held_out = synthetic_corpus(500, 12);
  const std::vector<std::string> pieces = compute_word_piece_vocabulary(corpus, {.vocabulary_size = 300});
  const WordPieceTokenizer word_piece(pieces, {.lowercase = false});
  const WordTokenizer words(Vocabulary(build_word_vocabulary(
      corpus, {.max_size = static_cast<int64_t>(pieces.size())})));
  int64_t piece_unknowns = 0;
  int64_t word_unknowns = 0;
  for (const std::string& line : held_out) {
    for (const int32_t id : word_piece.tokenize(line)) piece_unknowns += id == word_piece.oov_id();
    for (const int32_t id : words.tokenize(line)) word_unknowns += id == words.oov_id();
  }
  EXPECT_GT(word_unknowns, 0);
  EXPECT_LT(piece_unknowns, word_unknowns);
  EXPECT_EQ(piece_unknowns, 0);  // every character is a piece, so every word splits
}

TEST(WordPieceVocabularyTest, LowercasesWhenAsked) {
  const std::vector<std::string> lines(20, "AB");
  EXPECT_THAT(compute_word_piece_vocabulary(lines, {.vocabulary_size = 10, .lowercase = true}),
              ElementsAre("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]", "a", "b", "ab", "##a", "##b"));
}

// TF Text's learn() (wordpiece_tokenizer_learner_lib.py), transcribed line by line with
// plain maps of strings: slow, but nothing in it is clever. Ties in count are in code point
// order (a std::map's), as in the port, where Python keeps dict insertion order.
namespace reference {

using Counts = std::map<std::u32string, int64_t>;

std::vector<size_t> get_split_indices(const std::u32string& word, const Counts& tokens, const std::u32string& joiner) {
  std::vector<size_t> indices;
  size_t start = 0;
  while (start < word.size()) {
    size_t end = word.size();
    while (end > start) {
      const std::u32string subtoken = (start > 0 ? joiner : U"") + word.substr(start, end - start);
      if (tokens.contains(subtoken)) break;
      --end;
    }
    if (end == start) return {};
    indices.push_back(end);
    start = end;
  }
  return indices;
}

void ensure_all_tokens_exist(const std::set<char32_t>& chars, Counts& tokens, const std::u32string& joiner) {
  for (const char32_t c : chars) {
    tokens.try_emplace(std::u32string(1, c), 1);
    tokens.try_emplace(joiner + c, 1);
  }
}

Counts learn_with_thresh(const std::vector<std::pair<std::u32string, int64_t>>& words, int64_t thresh,
                         const WordPieceVocabularyOptions& options, const std::set<char32_t>& chars) {
  const std::u32string joiner = to_utf32(options.suffix_indicator);
  Counts current;
  ensure_all_tokens_exist(chars, current, joiner);
  for (int iteration = 0; iteration < options.num_iterations; ++iteration) {
    std::vector<Counts> subtokens(static_cast<size_t>(options.max_token_length) + 1);
    for (const auto& [word, count] : words) {
      std::vector<size_t> split_indices;
      if (iteration == 0) {
        for (size_t i = 1; i <= word.size(); ++i) split_indices.push_back(i);
      } else {
        split_indices = get_split_indices(word, current, joiner);
        if (split_indices.empty()) continue;
      }
      size_t start = 0;
      for (const size_t index : split_indices) {
        for (size_t end = start + 1; end <= word.size(); ++end) {
          const std::u32string subtoken = (start > 0 ? joiner : U"") + word.substr(start, end - start);
          subtokens[end - start][subtoken] += count;
        }
        start = index;
      }
    }
    Counts next;
    for (size_t length = subtokens.size() - 1; length >= 1; --length) {
      for (auto& [token, count] : subtokens[length]) {
        if (count >= thresh) next[token] = count;
        const size_t joiner_length = token.size() > length ? joiner.size() : 0;
        for (size_t i = 1; i < length; ++i) {
          const auto prefix = subtokens[i].find(token.substr(0, i + joiner_length));
          if (prefix != subtokens[i].end()) prefix->second -= count;
        }
      }
    }
    current = next;
    ensure_all_tokens_exist(chars, current, joiner);
  }
  return current;
}

std::vector<std::string> vocabulary(const Counts& tokens, const std::set<char32_t>& chars,
                                    const WordPieceVocabularyOptions& options) {
  std::vector<std::pair<std::u32string, int64_t>> sorted(tokens.begin(), tokens.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> vocab;
  auto add = [&](const std::string& token) {
    if (std::find(vocab.begin(), vocab.end(), token) == vocab.end()) vocab.push_back(token);
  };
  for (const std::string& token : options.reserved_tokens) add(token);
  for (const char32_t c : chars) add(to_utf8(std::u32string(1, c)));
  for (const auto& [token, count] : sorted) add(to_utf8(token));
  return vocab;
}

std::vector<std::string> learn(const std::map<std::string, int64_t>& word_counts,
                               const WordPieceVocabularyOptions& options) {
  int64_t max_count = INT64_MIN;
  int64_t min_count = INT64_MAX;
  std::vector<std::pair<std::u32string, int64_t>> kept;
  std::map<char32_t, int64_t> char_counts;
  for (const auto& [word, count] : word_counts) {
    max_count = std::max(max_count, count);
    min_count = std::min(min_count, count);
    const std::u32string chars = to_utf32(word);
    const bool reserved = std::count(options.reserved_tokens.begin(), options.reserved_tokens.end(), word) > 0;
    if (static_cast<int64_t>(chars.size()) > options.max_token_length || reserved) continue;
    kept.emplace_back(chars, count);
    for (const char32_t c : chars) char_counts[c] += count;
  }
  std::vector<std::pair<char32_t, int64_t>> by_count(char_counts.begin(), char_counts.end());
  std::stable_sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::set<char32_t> allowed;
  for (size_t i = 0; i < by_count.size() && static_cast<int64_t>(i) < options.max_unique_chars; ++i) {
    allowed.insert(by_count[i].first);
  }
  std::stable_sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::pair<std::u32string, int64_t>> words;
  for (const auto& [word, count] : kept) {
    if (options.max_input_tokens != -1 && static_cast<int64_t>(words.size()) >= options.max_input_tokens) break;
    if (std::all_of(word.begin(), word.end(), [&](char32_t c) { return allowed.contains(c); })) {
      words.emplace_back(word, count);
    }
  }
  std::set<char32_t> chars;
  for (const auto& [word, count] : words) chars.insert(word.begin(), word.end());
  int64_t lower = std::max(min_count, options.lower_threshold);
  int64_t upper = std::min(max_count, options.upper_threshold);
  const auto target = static_cast<double>(options.vocabulary_size);
  while (true) {
    const int64_t thresh = (upper + lower) / 2;
    std::vector<std::string> vocab = vocabulary(learn_with_thresh(words, thresh, options, chars), chars, options);
    const auto size = static_cast<double>(vocab.size());
    if ((size <= target && target - size <= options.slack_ratio * target) || lower >= upper || thresh <= 1) {
      if (vocab.size() > static_cast<size_t>(options.vocabulary_size)) vocab.resize(options.vocabulary_size);
      return vocab;
    }
    if (size > target) {
      lower = thresh + 1;
    } else {
      upper = thresh - 1;
    }
  }
}

}  // namespace reference

// Random small corpora over a few characters, with options that reach every branch: words
// that begin with the joiner (so a word start and a continuation share a string), an empty
// joiner, thresholds <= 0, zero iterations, and each filter biting.
TEST(WordPieceVocabularyTest, MatchesALiteralTranscriptionOfTfText) {
  const std::vector<std::string> characters{"#", "a", "b", "\u00e9", "c"};
  const std::vector<std::string> joiners{"##", "#", "a", ""};
  std::mt19937 rng(2024);
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint32_t>(hi - lo + 1));
  };
  for (int trial = 0; trial < 1000; ++trial) {
    const std::vector<std::string> alphabet(characters.begin(), characters.begin() + pick(2, 5));
    std::map<std::string, int64_t> word_counts;
    const int64_t num_words = pick(1, 40);
    for (int64_t w = 0; w < num_words; ++w) {
      std::string word;
      for (int64_t n = pick(1, 7); n > 0; --n) word += alphabet[pick(0, static_cast<int64_t>(alphabet.size()) - 1)];
      word_counts[word] = pick(1, 3) == 1 ? pick(1, 60) : pick(1, 6);
    }
    WordPieceVocabularyOptions options{.vocabulary_size = pick(1, 60)};
    options.suffix_indicator = joiners[pick(0, static_cast<int64_t>(joiners.size()) - 1)];
    if (pick(0, 3) == 0) options.reserved_tokens = {"[UNK]", word_counts.begin()->first};
    options.lower_threshold = pick(-2, 12);
    options.upper_threshold = pick(0, 5) == 0 ? pick(-3, 1) : pick(1, 80);
    options.num_iterations = static_cast<int>(pick(0, 5));
    options.max_input_tokens = pick(0, 2) == 0 ? pick(1, 30) : -1;
    options.max_token_length = pick(2, 8);
    options.max_unique_chars = pick(2, 6);
    const std::string where = "trial " + std::to_string(trial);
    EXPECT_EQ(learn_word_piece_vocabulary(word_counts, options), reference::learn(word_counts, options)) << where;
  }
}

TEST(WordPieceVocabularyTest, BadArgumentsAreErrors) {
  EXPECT_THAT([] { (void)compute_word_piece_vocabulary(std::vector<std::string>{"a"}, {.vocabulary_size = 0}); },
              ThrowsMessage<ValueError>(HasSubstr("expected vocabulary_size > 0. Received: vocabulary_size=0")));
  EXPECT_THAT([] { (void)compute_word_piece_vocabulary(std::vector<std::string>{" ", ""}, {.vocabulary_size = 5}); },
              ThrowsMessage<ValueError>(HasSubstr("compute_word_piece_vocabulary: the input holds no words")));
  EXPECT_THAT(
      [] { (void)compute_word_piece_vocabulary(std::vector<std::string>{"ok", "b\xff"}, {.vocabulary_size = 5}); },
      ThrowsMessage<ValueError>(HasSubstr("compute_word_piece_vocabulary: line 2: invalid UTF-8 at byte 1")));
}

}  // namespace
}  // namespace chorus::text
