// MaskedLMMaskGenerator (KerasNLP): picks positions of a token sequence for masked-LM
// training and replaces them ([MASK], a random id, or unchanged). Every random draw comes
// from Philox keyed by (seed, epoch, element index), so a row's masks do not depend on how
// rows are spread over threads or batches. Immutable after construction; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "chorus/core/tree.h"

namespace chorus::text {

struct MaskedLMMaskGeneratorOptions {
  int32_t vocabulary_size = 0;        // random replacements are drawn from [0, vocabulary_size); required
  double mask_selection_rate = 0.15;  // share of the selectable positions chosen
  int64_t mask_selection_length = 0;  // M: the most positions chosen per row; outputs are padded to it; required
  int32_t mask_token_id = 0;          // what a chosen position becomes with probability mask_token_rate
  std::vector<int32_t> unselectable_token_ids = {0};  // never chosen ([PAD], [CLS], [SEP], ...)
  double mask_token_rate = 0.8;
  double random_token_rate = 0.1;  // the rest, 1 - mask - random, stays unchanged
  uint64_t seed = 0;
};

// One row's result. token_ids has the row's length; the mask_* vectors have length M,
// positions in increasing order, padded with position 0, id 0 and weight 0.
struct MaskedLMRow {
  std::vector<int32_t> token_ids;
  std::vector<int32_t> mask_positions;
  std::vector<int32_t> mask_ids;      // the original ids at mask_positions: the labels
  std::vector<float> mask_weights;    // 1 for a chosen position, 0 for padding
};

class MaskedLMMaskGenerator {
 public:
  // Throws ValueError for a non-positive vocabulary_size or mask_selection_length, a rate
  // outside [0, 1], or mask_token_rate + random_token_rate > 1.
  explicit MaskedLMMaskGenerator(MaskedLMMaskGeneratorOptions options);

  // Masks one row. Per row, min(ceil(rate x selectable), M) positions are chosen
  // uniformly among those whose id is selectable; each then takes one uniform draw u:
  // u < mask_token_rate -> mask_token_id, else u < mask + random rate -> a uniform id in
  // [0, V), else unchanged. `element` is the row's index in the epoch's stream.
  // Output pointers take ids.size() ids and M positions/ids/weights.
  void mask(std::span<const int32_t> ids, uint64_t epoch, uint64_t element, int32_t* token_ids,
            int32_t* mask_positions, int32_t* mask_ids, float* mask_weights) const;
  MaskedLMRow mask(std::span<const int32_t> ids, uint64_t epoch, uint64_t element) const;
  // A (B, L) int32 batch whose row b is element first_element + b: {"token_ids": (B, L),
  // "mask_positions", "mask_ids": (B, M) int32, "mask_weights": (B, M) float32}.
  Tree mask_batch(const Tensor& token_ids, uint64_t epoch, uint64_t first_element) const;

  // The number of positions a row with `selectable` selectable ids gets.
  int64_t num_to_select(int64_t selectable) const;
  const MaskedLMMaskGeneratorOptions& options() const { return options_; }

 private:
  bool selectable(int32_t id) const;

  MaskedLMMaskGeneratorOptions options_;
  uint64_t key_;  // the seed's Philox key, before mixing in epoch and element
};

}  // namespace chorus::text
