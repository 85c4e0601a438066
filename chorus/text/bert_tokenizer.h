// BertTokenizer: a WordPieceTokenizer whose vocabulary holds BERT's special tokens
// ([PAD], [UNK], [CLS], [SEP], [MASK]); their ids are looked up once. Immutable after
// construction: one instance may serve many threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/text/word_piece_tokenizer.h"

namespace chorus::text {

struct BertTokenizerOptions {
  int64_t sequence_length = 0;  // as WordPieceTokenizerOptions
  bool lowercase = true;        // true for the *_uncased presets
  bool strip_accents = false;
  bool split_on_cjk = true;
};

class BertTokenizer {
 public:
  static constexpr const char* kPadToken = "[PAD]";
  static constexpr const char* kUnkToken = "[UNK]";
  static constexpr const char* kClsToken = "[CLS]";
  static constexpr const char* kSepToken = "[SEP]";
  static constexpr const char* kMaskToken = "[MASK]";

  // Throws ValueError listing every special token missing from `vocabulary`.
  explicit BertTokenizer(Vocabulary vocabulary, BertTokenizerOptions options = {});
  static BertTokenizer from_file(const std::string& path, BertTokenizerOptions options = {});

  std::vector<int32_t> tokenize(std::string_view text) const { return word_piece_.tokenize(text); }
  std::vector<std::vector<int32_t>> tokenize(const std::vector<std::string>& batch) const {
    return word_piece_.tokenize(batch);
  }
  Tensor tokenize_dense(const std::vector<std::string>& batch) const { return word_piece_.tokenize_dense(batch); }
  void tokenize_into(std::string_view text, std::vector<int32_t>& out) const { word_piece_.tokenize_into(text, out); }
  std::vector<std::string> tokenize_to_pieces(std::string_view text) const {
    return word_piece_.tokenize_to_pieces(text);
  }
  std::string detokenize(const std::vector<int32_t>& ids) const { return word_piece_.detokenize(ids); }
  // String tensors in, int32 ids out, and back: WordPieceTokenizer's tensor API.
  Tree tokenize(const Tensor& strings) const { return word_piece_.tokenize(strings); }
  Tensor detokenize(const Tensor& ids) const { return word_piece_.detokenize(ids); }
  Tensor detokenize(const RaggedTensor& ids) const { return word_piece_.detokenize(ids); }
  Tensor detokenize(const Tree& ids) const { return word_piece_.detokenize(ids); }

  int32_t vocabulary_size() const { return word_piece_.vocabulary_size(); }
  const Vocabulary& vocabulary() const { return word_piece_.vocabulary(); }
  const std::string& id_to_token(int32_t id) const { return word_piece_.id_to_token(id); }
  int32_t token_to_id(std::string_view token) const { return word_piece_.token_to_id(token); }
  const WordPieceTokenizer& word_piece() const { return word_piece_; }

  int32_t pad_token_id() const { return pad_id_; }
  int32_t unk_token_id() const { return unk_id_; }
  int32_t cls_token_id() const { return cls_id_; }
  int32_t sep_token_id() const { return sep_id_; }
  int32_t mask_token_id() const { return mask_id_; }

 private:
  WordPieceTokenizer word_piece_;
  int32_t pad_id_, unk_id_, cls_id_, sep_id_, mask_id_;
};

}  // namespace chorus::text
