// IndexLookup: what StringLookup and IntegerLookup share (Keras's IndexLookup): a
// vocabulary of tokens (std::string or int64_t), given or learned by adapt() from a
// dataset by frequency, that maps tokens to indices — or indices back to tokens when
// inverted — with mask and OOV indices, and encodes the indices (OutputMode). The
// vocabulary is an immutable table swapped whole by set_vocabulary()/adapt(), so calls on
// other threads (dataset.map workers, replicas) are safe at any time and see either the
// old table or the new one. No weights: the vocabulary and IDF weights live in the config.
//
// Index layout (Keras's): with output_mode int, [mask token if set][num_oov_indices OOV
// indices][the vocabulary]; in the other modes the mask token takes no index (masked
// inputs are dropped) and the OOV indices come first.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/core/config_reader.h"
#include "chorus/data/dataset.h"
#include "chorus/layers/layer.h"
#include "chorus/layers/preprocessing/categorical_encoding.h"
#include "chorus/text/hash.h"

namespace chorus::layers {

// How OOV tokens spread over num_oov_indices > 1 buckets (IntegerLookup's oov_method).
enum class OovMethod {
  kFloorMod,  // integers: token mod num_oov_indices (Keras's default); strings hash anyway
  kFarmHash,  // fingerprint64 of the decimal text of an integer (strings always hash)
};

namespace detail {

// Tags the constructors that take an IndexLookupConfig (from_config, TextVectorization),
// so that `StringLookup({.vocabulary = ...})` picks the options struct unambiguously.
struct FullConfig {};

// Every option of an index lookup, with Keras's meaning (StringLookupOptions and
// IntegerLookupOptions document them for users).
template <class Token>
struct IndexLookupConfig {
  std::optional<int64_t> max_tokens;
  int64_t num_oov_indices = 1;
  std::optional<Token> mask_token;
  Token oov_token{};
  std::vector<Token> vocabulary;  // empty: none given
  std::string vocabulary_file;    // or a file of one token per line (Keras's vocabulary path)
  std::vector<float> idf_weights;
  bool invert = false;
  OutputMode output_mode = OutputMode::kInt;
  bool pad_to_max_tokens = false;
  OovMethod oov_method = OovMethod::kFloorMod;
  std::optional<text::SipHashKey> salt;
  std::string name;
  // Whether `vocabulary` came from the constructor (Keras's has_input_vocabulary): such a
  // layer refuses adapt(). from_config restores it.
  std::optional<bool> has_input_vocabulary;
};

}  // namespace detail

template <class Token>
class IndexLookup : public Layer {
 public:
  ~IndexLookup() override;
  IndexLookup(IndexLookup&& other) noexcept;

  // The vocabulary size including the mask and OOV indices: the depth of the encodings.
  int64_t vocabulary_size() const;
  // Keras's get_vocabulary: token i is what index i stands for (the mask token, then
  // oov_token for each OOV index) — or the learned tokens alone without special tokens.
  std::vector<Token> get_vocabulary(bool include_special_tokens = true) const;
  // The TF-IDF weight of each output index (vocabulary_size() entries, or max_tokens with
  // pad_to_max_tokens); empty unless output_mode is tf_idf and a vocabulary is set.
  std::vector<float> idf_weights() const;

  // Keras's set_vocabulary: replaces the vocabulary (and, for tf_idf, the IDF weights,
  // required there and refused elsewhere). `vocabulary` may start with the special
  // tokens in index order ([mask,] oov...), which are then recognised, not repeated; the
  // mask token elsewhere, a repeated token, or more than max_tokens entries in all are
  // ValueErrors naming the layer and the token. An idf weight per vocabulary entry; the
  // OOV indices get their average when the special tokens are not included. Changing the
  // vocabulary size of a called layer whose encodings have vocabulary_size() entries is a
  // ValueError (its outputs would change shape).
  void set_vocabulary(const std::vector<Token>& vocabulary, const std::vector<float>& idf_weights = {});

  // Keras's adapt: learns the vocabulary from `data`, the tokens sorted by count (ties:
  // the larger token first), the most frequent max_tokens - (special indices) kept; for
  // tf_idf also idf = log(1 + documents / (1 + documents holding the token)). A tensor
  // of rank 1 is one token per document; a tensor of higher rank one document per row.
  void adapt(const Tensor& data);
  // A dataset's elements are batches: a tensor (rank 0 or 1: one document; higher rank:
  // one per row) or a RaggedTensor in Tree form (one per row). At most `steps` batches
  // (all when absent). Throws ValueError naming the layer for an empty dataset, one with
  // no tokens but mask/OOV tokens, an infinite dataset without `steps`, an element of
  // another structure or dtype (naming its index), or a layer given a vocabulary at
  // construction.
  void adapt(const data::Dataset& data, std::optional<int64_t> steps = std::nullopt);

  // What call() computes, without building or recording: `inputs` is a tensor of any
  // shape or a RaggedTensor in Tree form. Thread-safe.
  Tree lookup(const Tree& inputs) const;

  // The shared keys, and the one key that tells the lookup classes apart at the only value
  // chorus supports: StringLookup's encoding "utf-8", IntegerLookup's vocabulary_dtype
  // "int64".
  nlohmann::json get_config() const override;

 protected:
  // Throws ValueError for inconsistent options ("expected X. Received: name=value"),
  // naming `class_name`.
  IndexLookup(std::string class_name, detail::IndexLookupConfig<Token> config);
  Tree call(const Tree& inputs, bool /*training*/) override { return lookup(inputs); }
  // The options stored by get_config() (the shared keys; "vocabulary" holds the current
  // vocabulary with its special tokens, so an adapted layer saves what it learned);
  // `default_oov` where the config has no oov_token. Throws ValueError for another value
  // of the class's own key ("StringLookup: only the utf-8 encoding is supported. Received:
  // encoding=latin-1").
  static detail::IndexLookupConfig<Token> config_from_json(ConfigReader& config, Token default_oov);
  // A lookup class's from_config: `make` builds the layer from config_from_json's result,
  // then the base fields are read and any other key is an error (index_lookup_config.h).
  template <class Make>
  static auto lookup_from_config(const char* class_name, const nlohmann::json& config, Token default_oov, Make make);

 private:
  struct Table;    // the vocabulary as call() reads it (index_lookup.cc)
  struct Counter;  // token counts gathered by adapt()
  std::shared_ptr<const Table> table() const;
  // Makes `table` current; throws ValueError if a called layer's output depth would change.
  void install(std::shared_ptr<const Table> table);
  void check_adaptable() const;
  // Makes the vocabulary adapt() learned from `counter`; `source` names the data in errors.
  void learn(Counter& counter, const std::string& source);
  // Token -> index (-1: a mask token dropped outside int mode) for every element of `x`.
  Tensor lookup_dense(const Table& table, const Tensor& x) const;
  // Index -> token for every element of `x` (invert).
  Tensor invert_dense(const Table& table, const Tensor& x) const;
  // The encoding's depth, checking that the layer has what the mode needs.
  int64_t depth(const Table& table) const;
  std::vector<Token> vocabulary_of(const Table& table, bool include_special_tokens) const;
  int64_t oov_start() const;
  int64_t token_start() const;

  detail::IndexLookupConfig<Token> config_;
  mutable std::mutex table_mutex_;
  std::shared_ptr<const Table> table_;  // GUARDED_BY(table_mutex_); never null
};

extern template class IndexLookup<std::string>;
extern template class IndexLookup<int64_t>;

}  // namespace chorus::layers
