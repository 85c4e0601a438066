// MultiSegmentPacker: trim, then lay out [start] s0 [sep] s1 [sep] ... s_last [end] [pad]...
#include "chorus/text/multi_segment_packer.h"

#include <algorithm>
#include <memory>

#include "chorus/core/error.h"

namespace chorus::text {

MultiSegmentPacker::MultiSegmentPacker(MultiSegmentPackerOptions options) : options_(options) {
  if (options_.sequence_length <= 0) {
    throw_error<ValueError>("MultiSegmentPacker: expected sequence_length > 0. Received: sequence_length={}",
                            options_.sequence_length);
  }
}

std::vector<size_t> MultiSegmentPacker::trimmed_lengths(const std::vector<size_t>& lengths, size_t room) const {
  std::vector<size_t> kept(lengths.size(), 0);
  if (options_.truncate == Truncation::kWaterfall) {
    for (size_t s = 0; s < lengths.size(); ++s) {
      kept[s] = std::min(lengths[s], room);
      room -= kept[s];
    }
    return kept;
  }
  // Round robin: whole rounds while every unfinished segment can take one more id.
  bool progress = true;
  while (room > 0 && progress) {
    progress = false;
    for (size_t s = 0; s < lengths.size() && room > 0; ++s) {
      if (kept[s] < lengths[s]) {
        ++kept[s];
        --room;
        progress = true;
      }
    }
  }
  return kept;
}

void MultiSegmentPacker::pack(const std::vector<std::span<const int32_t>>& segments, int32_t* token_ids,
                              int32_t* segment_ids, bool* padding_mask) const {
  const auto length = static_cast<size_t>(options_.sequence_length);
  if (segments.empty()) throw_error<ValueError>("MultiSegmentPacker: expected at least one segment, got none");
  if (length < segments.size() + 1) {
    throw_error<ValueError>("MultiSegmentPacker: sequence_length {} cannot hold the {} start/separator/end ids of {} "
                            "segment(s)",
                            length, segments.size() + 1, segments.size());
  }
  std::vector<size_t> lengths;
  for (const auto& segment : segments) lengths.push_back(segment.size());
  const std::vector<size_t> kept = trimmed_lengths(lengths, length - segments.size() - 1);
  const int32_t sep = options_.sep_value.value_or(options_.end_value);
  size_t n = 0;
  token_ids[n] = options_.start_value;
  segment_ids[n++] = 0;
  for (size_t s = 0; s < segments.size(); ++s) {
    std::copy_n(segments[s].begin(), kept[s], token_ids + n);
    std::fill_n(segment_ids + n, kept[s] + 1, static_cast<int32_t>(s));
    n += kept[s];
    token_ids[n++] = s + 1 == segments.size() ? options_.end_value : sep;
  }
  std::fill(token_ids + n, token_ids + length, options_.pad_value);
  std::fill(segment_ids + n, segment_ids + length, 0);
  std::fill(padding_mask, padding_mask + n, true);
  std::fill(padding_mask + n, padding_mask + length, false);
}

PackedSegments MultiSegmentPacker::pack(const std::vector<std::span<const int32_t>>& segments) const {
  const auto length = static_cast<size_t>(options_.sequence_length);
  std::vector<int32_t> token_ids(length);
  std::vector<int32_t> segment_ids(length);
  auto mask = std::make_unique<bool[]>(length);
  pack(segments, token_ids.data(), segment_ids.data(), mask.get());
  return {std::move(token_ids), std::move(segment_ids), std::vector<bool>(mask.get(), mask.get() + length)};
}

Tree MultiSegmentPacker::pack_batch(const std::vector<std::vector<std::vector<int32_t>>>& segments) const {
  if (segments.empty()) throw_error<ValueError>("MultiSegmentPacker: expected at least one segment, got none");
  const size_t rows = segments[0].size();
  for (size_t s = 1; s < segments.size(); ++s) {
    if (segments[s].size() != rows) {
      throw_error<ValueError>("MultiSegmentPacker: segment {} has {} rows, expected {} as segment 0", s,
                              segments[s].size(), rows);
    }
  }
  const Shape shape{static_cast<int64_t>(rows), options_.sequence_length};
  Tensor token_ids = Tensor::empty(shape, kInt32);
  Tensor segment_ids = Tensor::empty(shape, kInt32);
  Tensor padding_mask = Tensor::empty(shape, kBool);
  const auto length = static_cast<size_t>(options_.sequence_length);
  std::vector<std::span<const int32_t>> row(segments.size());
  for (size_t b = 0; b < rows; ++b) {
    for (size_t s = 0; s < segments.size(); ++s) row[s] = segments[s][b];
    pack(row, token_ids.data<int32_t>() + b * length, segment_ids.data<int32_t>() + b * length,
         padding_mask.data<bool>() + b * length);
  }
  return Tree{{"token_ids", token_ids}, {"segment_ids", segment_ids}, {"padding_mask", padding_mask}};
}

}  // namespace chorus::text
