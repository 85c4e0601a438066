// MultiSegmentPacker (KerasNLP): packs one or more segments of token ids as
// `[start] a [sep] b [end]` with segment ids, truncating the segments to fit and padding
// to a fixed length. Immutable after construction; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "chorus/core/tree.h"

namespace chorus::text {

// How segments are cut to fit (tf_text's RoundRobinTrimmer / WaterfallTrimmer).
enum class Truncation {
  kRoundRobin,  // the room is handed out one id at a time to each segment in turn
  kWaterfall,   // the first segment takes all it needs, then the next from what is left
};

struct MultiSegmentPackerOptions {
  int64_t sequence_length = 0;         // the output length L; required
  int32_t start_value = 0;             // BERT's [CLS]
  int32_t end_value = 0;               // after the last segment: BERT's [SEP]
  std::optional<int32_t> sep_value;    // after every other segment; default end_value
  int32_t pad_value = 0;
  Truncation truncate = Truncation::kRoundRobin;
};

// One packed example, each of length L. padding_mask is 1 for real (incl. special) ids.
struct PackedSegments {
  std::vector<int32_t> token_ids;
  std::vector<int32_t> segment_ids;
  std::vector<bool> padding_mask;
};

class MultiSegmentPacker {
 public:
  // Throws ValueError if sequence_length is not positive.
  explicit MultiSegmentPacker(MultiSegmentPackerOptions options);

  // How many ids of each segment fit in `room` positions under the truncation rule.
  std::vector<size_t> trimmed_lengths(const std::vector<size_t>& lengths, size_t room) const;

  // Packs `segments` into L-long rows. segment_ids: 0 for the start id, the first segment
  // and its separator, i for segment i and the id after it, 0 for padding. Throws
  // ValueError when there are no segments or L < segments + 1 (no room for the specials).
  void pack(const std::vector<std::span<const int32_t>>& segments, int32_t* token_ids, int32_t* segment_ids,
            bool* padding_mask) const;
  PackedSegments pack(const std::vector<std::span<const int32_t>>& segments) const;
  // segments[s][b] is row b of segment s (Keras's tuple of batched segments); every
  // segment must have the same number of rows. {"token_ids", "segment_ids": (B, L) int32,
  // "padding_mask": (B, L) bool}.
  Tree pack_batch(const std::vector<std::vector<std::vector<int32_t>>>& segments) const;

  const MultiSegmentPackerOptions& options() const { return options_; }

 private:
  MultiSegmentPackerOptions options_;
};

}  // namespace chorus::text
