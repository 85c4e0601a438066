// compute_word_piece_vocabulary: learns a WordPiece vocabulary bottom-up from text, as
// KerasNLP's compute_word_piece_vocabulary does with TF Text's learner
// (wordpiece_tokenizer_learner_lib.learn). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace chorus::text {

struct WordPieceVocabularyOptions {
  // The target size; the result has at most this many tokens and, when the corpus allows,
  // at least (1 - slack_ratio) times it. Required (> 0).
  int64_t vocabulary_size = 0;
  // Pre-tokenisation (pretokenizer.h). KerasNLP's defaults: no lowercasing.
  bool lowercase = false;
  bool strip_accents = false;
  bool split = true;
  bool split_on_cjk = true;
  std::string suffix_indicator = "##";
  // First in the vocabulary, in this order.
  std::vector<std::string> reserved_tokens = {"[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"};

  // The learner's knobs, with TF Text's defaults.
  int64_t upper_threshold = 10'000'000;  // initial upper bound of the count-threshold search
  int64_t lower_threshold = 10;          // ... and lower bound
  int num_iterations = 4;                // counting passes per threshold
  int64_t max_input_tokens = 5'000'000;  // most frequent distinct words kept (-1: all)
  int64_t max_token_length = 50;         // longer words (in characters) are dropped
  int64_t max_unique_chars = 1000;       // words with rarer characters are dropped
  double slack_ratio = 0.05;             // accepted shortfall below vocabulary_size
};

// The vocabulary learned from `lines`: reserved tokens, then every character of the kept
// words in code point order, then learned pieces (with their "##" forms), most frequent
// first. Throws ValueError if vocabulary_size <= 0, or if the lines hold no words.
std::vector<std::string> compute_word_piece_vocabulary(const std::vector<std::string>& lines,
                                                       const WordPieceVocabularyOptions& options);
// The same over a source that yields lines until it returns nullopt (a file, a dataset).
std::vector<std::string> compute_word_piece_vocabulary(const std::function<std::optional<std::string>()>& next_line,
                                                       const WordPieceVocabularyOptions& options);

// The learner alone, on pre-tokenised word counts (TF Text's learn()). It holds every
// substring of every kept word (memory grows with the words' lengths squared: the whole
// process peaks at ~54 MB on WikiText-2's training split).
std::vector<std::string> learn_word_piece_vocabulary(const std::map<std::string, int64_t>& word_counts,
                                                     const WordPieceVocabularyOptions& options);

}  // namespace chorus::text
