// TextVectorization: turns strings into sequences of token indices or into bag-of-words
// vectors (keras.layers.TextVectorization): standardize each string, split it into
// tokens, add ngrams, then look the tokens up in a vocabulary that is given or learned
// by adapt() (a StringLookup with mask token "" inside). The vocabulary is saved in the
// config, so load_model restores it. Thread-safe to call (dataset.map workers, replicas);
// adapt() swaps the vocabulary whole (see IndexLookup).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chorus/core/ragged_tensor.h"
#include "chorus/layers/preprocessing/string_lookup.h"
#include "chorus/text/regex.h"

namespace chorus::layers {

// Keras's standardize strings: "lower_and_strip_punctuation", "lower", "strip_punctuation", None.
enum class Standardize { kNone, kLowerAndStripPunctuation, kLower, kStripPunctuation };
// Keras's split strings: "whitespace", "character", None.
enum class Split { kNone, kWhitespace, kCharacter };

struct TextVectorizationOptions {
  // The most vocabulary entries, the mask "" (int mode) and the OOV "[UNK]" included.
  std::optional<int64_t> max_tokens;
  // lower: ASCII A-Z to a-z (tf.strings.lower); strip_punctuation: removes the ASCII
  // punctuation !"#$%&()*+,-./:;<=>?@[\]^_`{|}~' (Keras's regex).
  Standardize standardize = Standardize::kLowerAndStripPunctuation;
  // whitespace: runs of ASCII whitespace separate tokens; character: one token per
  // Unicode code point (invalid UTF-8 becomes U+FFFD); none: each string is a token.
  Split split = Split::kWhitespace;
  // Keras's callable standardize and split, applied to one string at a time; when set
  // they replace `standardize` / `split`. Thread-safe callables only (maps run in
  // parallel). A config records them as {"class_name": "function", "config": "custom"};
  // from_config cannot rebuild them (build the layer in code, then load its weights).
  std::function<std::string(std::string_view)> custom_standardize;
  std::function<std::vector<std::string>(std::string_view)> custom_split;
  // The ngram widths to emit, each row's n-grams (tokens joined by " ") width by width in
  // this order. Empty: the tokens alone (Keras's None); Keras's ngrams=N is {1, ..., N}.
  std::vector<int> ngrams;
  // int, multi_hot, count or tf_idf (one_hot is StringLookup's).
  OutputMode output_mode = OutputMode::kInt;
  // int only: pad with 0 or truncate every sequence to this length (None: the longest).
  std::optional<int64_t> output_sequence_length;
  bool pad_to_max_tokens = false;  // multi_hot/count/tf_idf: vectors of max_tokens entries
  std::vector<std::string> vocabulary;  // may start with "" and "[UNK]"; empty: adapt()
  std::string vocabulary_file;          // or one token per line in this file (Keras's path)
  std::vector<float> idf_weights;       // tf_idf with a vocabulary: one per entry
  bool ragged = false;                  // int only: a RaggedTensor (Tree form) per batch
  std::string name;                     // empty: "text_vectorization", ...
};

// Input: a string tensor of shape (B,) or (B, 1) — one text per row — or a single string
// (rank 0); without split also (B, T) of tokens. Output, int mode: int64 (B, L) with L =
// output_sequence_length or the longest row, 0 padding (a single string: (L,); ragged: a
// RaggedTensor in Tree form); other modes: float32 (B, depth) ((depth,) for one string).
// A non-string tensor is a DTypeError; a (B, k) tensor with k != 1 a ValueError.
//
//   layers::TextVectorization vectorize({.max_tokens = 5000, .output_sequence_length = 4});
//   vectorize.adapt(Tensor::from_strings({"foo bar", "bar baz", "baz bada boom"}));
//   vectorize(Tensor::from_strings(Shape{2, 1}, {"foo qux bar", "qux baz"}));  // [[4, 1, 3, 0], [1, 2, 0, 0]]
class TextVectorization : public Layer {
 public:
  // Throws ValueError for output_sequence_length or ragged outside int mode, an ngram
  // width < 1, output_sequence_length < 1, or what StringLookup rejects.
  explicit TextVectorization(TextVectorizationOptions options = {});

  // Learns the vocabulary from a string tensor (each string one document) or from a
  // dataset of string batches (at most `steps`), as StringLookup::adapt does with the
  // tokens. Throws ValueError naming the layer for empty data.
  void adapt(const Tensor& data);
  void adapt(const data::Dataset& data, std::optional<int64_t> steps = std::nullopt);

  std::vector<std::string> get_vocabulary(bool include_special_tokens = true) const {
    return lookup_->get_vocabulary(include_special_tokens);
  }
  void set_vocabulary(const std::vector<std::string>& vocabulary, const std::vector<float>& idf_weights = {}) {
    lookup_->set_vocabulary(vocabulary, idf_weights);
  }
  int64_t vocabulary_size() const { return lookup_->vocabulary_size(); }

  // Steps 1-3 alone (standardize, split, ngrams): one ragged row of string tokens per
  // input text (a single string gives one row). Thread-safe.
  RaggedTensor preprocess(const Tensor& inputs) const;

  nlohmann::json get_config() const override;
  static std::shared_ptr<TextVectorization> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<TextVectorization>(std::move(*this)); }

 protected:
  Tree call(const Tree& inputs, bool training) override;

 private:
  TextVectorization(TextVectorizationOptions options, std::optional<bool> has_input_vocabulary);

  TextVectorizationOptions options_;
  std::shared_ptr<const text::Regex> strip_;  // the punctuation pattern, compiled once (immutable)
  std::unique_ptr<StringLookup> lookup_;  // named as this layer, so its errors name it
};

}  // namespace chorus::layers
