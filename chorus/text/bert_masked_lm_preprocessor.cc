// BertMaskedLMPreprocessor: tokenise per element, pack the batch, mask row by row.
#include "chorus/text/bert_masked_lm_preprocessor.h"

#include "chorus/core/error.h"

namespace chorus::text {
namespace {

Tree squeeze_batch(const Tree& batch) {
  return batch.map([](const Tensor& t) {
    std::vector<int64_t> dims(t.shape().dims().begin() + 1, t.shape().dims().end());
    return t.view(Shape(dims));
  });
}

}  // namespace

BertMaskedLMPreprocessor::BertMaskedLMPreprocessor(BertTokenizer tokenizer, BertMaskedLMPreprocessorOptions options)
    : tokenizer_(std::move(tokenizer)),
      packer_({.sequence_length = options.sequence_length,
               .start_value = tokenizer_.cls_token_id(),
               .end_value = tokenizer_.sep_token_id(),
               .pad_value = tokenizer_.pad_token_id(),
               .truncate = options.truncate}),
      masker_({.vocabulary_size = tokenizer_.vocabulary_size(),
               .mask_selection_rate = options.mask_selection_rate,
               .mask_selection_length = options.mask_selection_length,
               .mask_token_id = tokenizer_.mask_token_id(),
               .unselectable_token_ids = {tokenizer_.pad_token_id(), tokenizer_.cls_token_id(),
                                          tokenizer_.sep_token_id(), tokenizer_.mask_token_id(),
                                          tokenizer_.unk_token_id()},
               .mask_token_rate = options.mask_token_rate,
               .random_token_rate = options.random_token_rate,
               .seed = options.seed}) {}

Tree BertMaskedLMPreprocessor::batch_of(const std::vector<std::vector<std::vector<int32_t>>>& segments,
                                        uint64_t epoch, uint64_t first_element) const {
  Tree packed = packer_.pack_batch(segments);
  Tree masked = masker_.mask_batch(packed["token_ids"].tensor(), epoch, first_element);
  masked["segment_ids"] = packed["segment_ids"];
  masked["padding_mask"] = packed["padding_mask"];
  return masked;
}

std::vector<int32_t> BertMaskedLMPreprocessor::ids_of(std::string_view text) const {
  std::vector<int32_t> ids;
  tokenizer_.tokenize_into(text, ids);  // unpadded, whatever the tokenizer's sequence_length
  return ids;
}

Tree BertMaskedLMPreprocessor::call(std::string_view text, uint64_t epoch, uint64_t element) const {
  return squeeze_batch(batch_of({{ids_of(text)}}, epoch, element));
}

Tree BertMaskedLMPreprocessor::call(std::string_view first, std::string_view second, uint64_t epoch,
                                    uint64_t element) const {
  return squeeze_batch(batch_of({{ids_of(first)}, {ids_of(second)}}, epoch, element));
}

Tree BertMaskedLMPreprocessor::call_batch(const std::vector<std::string>& texts, uint64_t epoch,
                                          uint64_t first_element) const {
  std::vector<std::vector<int32_t>> rows(texts.size());
  for (size_t b = 0; b < texts.size(); ++b) {
    try {
      rows[b] = ids_of(texts[b]);
    } catch (const ValueError& e) {
      throw_error<ValueError>("BertMaskedLMPreprocessor: batch element {}: {}", b, e.what());
    }
  }
  return batch_of({std::move(rows)}, epoch, first_element);
}

}  // namespace chorus::text
