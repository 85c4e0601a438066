// BertTokenizer: checks the special tokens before the WordPiece tokenizer sees the
// vocabulary, so one error names all that are missing.
#include "chorus/text/bert_tokenizer.h"

#include "chorus/core/error.h"

namespace chorus::text {
namespace {

Vocabulary checked(Vocabulary vocabulary) {
  std::string missing;
  for (const char* token : {BertTokenizer::kPadToken, BertTokenizer::kUnkToken, BertTokenizer::kClsToken,
                            BertTokenizer::kSepToken, BertTokenizer::kMaskToken}) {
    if (!vocabulary.contains(token)) missing += (missing.empty() ? "" : ", ") + std::string(token);
  }
  if (!missing.empty()) {
    throw_error<ValueError>("BertTokenizer: vocabulary {} lacks special token(s) {}; expected all of "
                            "[PAD], [UNK], [CLS], [SEP], [MASK]",
                            vocabulary.source(), missing);
  }
  return vocabulary;
}

}  // namespace

BertTokenizer::BertTokenizer(Vocabulary vocabulary, BertTokenizerOptions options)
    : word_piece_(checked(std::move(vocabulary)), {.sequence_length = options.sequence_length,
                                                   .lowercase = options.lowercase,
                                                   .strip_accents = options.strip_accents,
                                                   .split_on_cjk = options.split_on_cjk,
                                                   .oov_token = kUnkToken}),
      pad_id_(word_piece_.token_to_id(kPadToken)),
      unk_id_(word_piece_.token_to_id(kUnkToken)),
      cls_id_(word_piece_.token_to_id(kClsToken)),
      sep_id_(word_piece_.token_to_id(kSepToken)),
      mask_id_(word_piece_.token_to_id(kMaskToken)) {}

BertTokenizer BertTokenizer::from_file(const std::string& path, BertTokenizerOptions options) {
  return BertTokenizer(Vocabulary::from_file(path), options);
}

}  // namespace chorus::text
