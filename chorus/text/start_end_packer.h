// StartEndPacker (KerasNLP): adds optional start/end ids to a sequence of token ids,
// truncates and pads it to a fixed length. Immutable after construction; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "chorus/core/tree.h"

namespace chorus::text {

struct StartEndPackerOptions {
  // The output length L. Required (> 0).
  int64_t sequence_length = 0;
  std::optional<int32_t> start_value;  // prepended when set (BERT's [CLS])
  std::optional<int32_t> end_value;    // appended when set, kept even when truncating
  int32_t pad_value = 0;
};

class StartEndPacker {
 public:
  // Throws ValueError if sequence_length is not positive, or too short to hold the start
  // and end ids.
  explicit StartEndPacker(StartEndPackerOptions options);

  // Writes L ids to token_ids and, if given, L flags (1 for a real id, start and end
  // included; 0 for padding) to padding_mask.
  void pack(std::span<const int32_t> ids, int32_t* token_ids, bool* padding_mask = nullptr) const;
  std::vector<int32_t> pack(std::span<const int32_t> ids) const;
  // {"token_ids": (B, L) int32, "padding_mask": (B, L) bool}.
  Tree pack_batch(const std::vector<std::vector<int32_t>>& batch) const;

  const StartEndPackerOptions& options() const { return options_; }

 private:
  StartEndPackerOptions options_;
};

}  // namespace chorus::text
