// StringLookup: maps strings to indices of a vocabulary, or back (keras.layers.StringLookup),
// optionally encoding the indices (one_hot, multi_hot, count, tf_idf). The vocabulary is
// given or learned by adapt(); it is saved in the config, so load_model restores it.
// Thread-safe to call (dataset.map workers, replicas); see IndexLookup.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chorus/layers/preprocessing/index_lookup.h"

namespace chorus::layers {

struct StringLookupOptions {
  // The most indices, mask and OOV ones included (None: no limit). adapt() keeps the most
  // frequent tokens that fit; pad_to_max_tokens pads encodings to it.
  std::optional<int64_t> max_tokens;
  // OOV indices: 0 makes an OOV input an error; above 1, OOV strings spread over them by
  // fingerprint64 (siphash64 with a salt).
  int64_t num_oov_indices = 1;
  // A token for masked inputs: index 0 in int mode, dropped by the encodings. None: no mask.
  std::optional<std::string> mask_token;
  // What an inverted lookup returns for an OOV index.
  std::string oov_token = "[UNK]";
  // The vocabulary, optionally starting with the special tokens ([mask,] OOV...). Empty:
  // set later with set_vocabulary() or adapt().
  std::vector<std::string> vocabulary;
  // Or a text file with one token per line (Keras's `vocabulary` given as a path); the
  // tokens it holds are saved in the config.
  std::string vocabulary_file;
  // tf_idf only, one per vocabulary entry (required with a vocabulary).
  std::vector<float> idf_weights;
  // Map indices (int32/int64) back to strings. Only with output_mode int.
  bool invert = false;
  OutputMode output_mode = OutputMode::kInt;
  // multi_hot/count/tf_idf: encodings of max_tokens entries whatever the vocabulary size.
  bool pad_to_max_tokens = false;
  // SipHash key for OOV buckets instead of FarmHash (num_oov_indices > 1).
  std::optional<text::SipHashKey> salt;
  std::string name;  // empty: "string_lookup", "string_lookup_1", ...
};

// Input: a string tensor of any shape S, or a RaggedTensor of strings in Tree form.
// Output: int → int64 indices of shape S (ragged stays ragged); one_hot → float32
// S + (depth,) (S[:-1] + (depth,) when the last dim is 1); multi_hot/count/tf_idf →
// float32 S[:-1] + (depth,) (one row per ragged row), depth = vocabulary_size() or
// max_tokens. invert: int32/int64 indices → strings of the same shape. A tensor of the
// wrong dtype is a DTypeError naming the layer.
//
//   layers::StringLookup lookup({.vocabulary = {"a", "b", "c", "d"}});
//   lookup(Tensor::from_strings(Shape{2, 3}, {"a", "c", "d", "d", "z", "b"}));  // [[1, 3, 4], [4, 0, 2]]
class StringLookup : public IndexLookup<std::string> {
 public:
  // Throws ValueError for inconsistent options (invert with another output mode, idf
  // weights without tf_idf, max_tokens <= 1, ...) or a bad vocabulary.
  explicit StringLookup(StringLookupOptions options = {});

  static std::shared_ptr<StringLookup> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<StringLookup>(std::move(*this)); }

 private:
  friend class TextVectorization;  // builds its lookup from the full config
  StringLookup(detail::FullConfig, detail::IndexLookupConfig<std::string> config);
};

}  // namespace chorus::layers
