// BertMaskedLMPreprocessor (KerasNLP): text -> BertTokenizer -> MultiSegmentPacker
// ([CLS] a [SEP] (b [SEP])) -> MaskedLMMaskGenerator, producing a BERT masked-LM example.
// Borrows nothing: it owns its tokenizer. Immutable after construction; thread-safe, and
// its masks depend only on (seed, epoch, element index), not on threading.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chorus/core/tree.h"
#include "chorus/text/bert_tokenizer.h"
#include "chorus/text/masked_lm_mask_generator.h"
#include "chorus/text/multi_segment_packer.h"

namespace chorus::text {

struct BertMaskedLMPreprocessorOptions {
  int64_t sequence_length = 512;  // L
  Truncation truncate = Truncation::kRoundRobin;
  double mask_selection_rate = 0.15;
  int64_t mask_selection_length = 96;  // M
  double mask_token_rate = 0.8;
  double random_token_rate = 0.1;
  uint64_t seed = 0;
};

class BertMaskedLMPreprocessor {
 public:
  // The special tokens ([PAD], [CLS], [SEP], [MASK], [UNK]) are never selected for masking.
  BertMaskedLMPreprocessor(BertTokenizer tokenizer, BertMaskedLMPreprocessorOptions options = {});

  // One example (element `element` of epoch `epoch`): {"token_ids", "segment_ids": (L)
  // int32, "padding_mask": (L) bool, "mask_positions", "mask_ids": (M) int32,
  // "mask_weights": (M) float32}. token_ids are the masked ids; mask_ids the labels.
  Tree call(std::string_view text, uint64_t epoch = 0, uint64_t element = 0) const;
  // A sentence pair, packed as [CLS] a [SEP] b [SEP].
  Tree call(std::string_view first, std::string_view second, uint64_t epoch = 0, uint64_t element = 0) const;
  // A batch: the same keys with a leading batch axis B; row b is element first_element + b.
  // Errors name the batch element.
  Tree call_batch(const std::vector<std::string>& texts, uint64_t epoch = 0, uint64_t first_element = 0) const;

  const BertTokenizer& tokenizer() const { return tokenizer_; }
  const MultiSegmentPacker& packer() const { return packer_; }
  const MaskedLMMaskGenerator& masker() const { return masker_; }

 private:
  std::vector<int32_t> ids_of(std::string_view text) const;
  Tree batch_of(const std::vector<std::vector<std::vector<int32_t>>>& segments, uint64_t epoch,
                uint64_t first_element) const;

  BertTokenizer tokenizer_;
  MultiSegmentPacker packer_;
  MaskedLMMaskGenerator masker_;
};

}  // namespace chorus::text
