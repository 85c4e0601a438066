// IntegerLookup: maps integer tokens to contiguous indices of a vocabulary, or back
// (keras.layers.IntegerLookup), optionally encoding the indices (one_hot, multi_hot,
// count, tf_idf). The vocabulary is given or learned by adapt(); it is saved in the
// config, so load_model restores it. Thread-safe to call; see IndexLookup.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chorus/layers/preprocessing/index_lookup.h"

namespace chorus::layers {

struct IntegerLookupOptions {
  // The most indices, mask and OOV ones included (None: no limit).
  std::optional<int64_t> max_tokens;
  // OOV indices: 0 makes an OOV input an error; above 1, oov_method spreads OOV tokens.
  int64_t num_oov_indices = 1;
  // A token for masked inputs: index 0 in int mode, dropped by the encodings. None: no mask.
  std::optional<int64_t> mask_token;
  // What an inverted lookup returns for an OOV index.
  int64_t oov_token = -1;
  // The vocabulary, optionally starting with the special tokens. Empty: set later.
  std::vector<int64_t> vocabulary;
  // Or a text file with one integer token per line (Keras's `vocabulary` given as a path).
  std::string vocabulary_file;
  // tf_idf only, one per vocabulary entry (required with a vocabulary).
  std::vector<float> idf_weights;
  bool invert = false;  // indices back to tokens; only with output_mode int
  OutputMode output_mode = OutputMode::kInt;
  bool pad_to_max_tokens = false;
  // kFloorMod: bucket = token mod num_oov_indices; kFarmHash: fingerprint64 of its text.
  OovMethod oov_method = OovMethod::kFloorMod;
  // SipHash key for OOV buckets (only with kFarmHash).
  std::optional<text::SipHashKey> salt;
  std::string name;  // empty: "integer_lookup", ...
};

// Input: an int32/int64 tensor of any shape S (or ragged in Tree form). Output as
// StringLookup's; invert maps int32/int64 indices to int64 tokens. A string or float
// tensor is a DTypeError naming the layer.
//
//   layers::IntegerLookup lookup({.vocabulary = {12, 36, 1138, 42}});
//   lookup(from_values<int64_t>({12, 1138, 42, 42, 1000, 36}, Shape{2, 3}));  // [[1, 3, 4], [4, 0, 2]]
class IntegerLookup : public IndexLookup<int64_t> {
 public:
  explicit IntegerLookup(IntegerLookupOptions options = {});

  static std::shared_ptr<IntegerLookup> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<IntegerLookup>(std::move(*this)); }

 private:
  IntegerLookup(detail::FullConfig, detail::IndexLookupConfig<int64_t> config);
};

}  // namespace chorus::layers
