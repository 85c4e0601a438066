// StartEndPacker: [start] ids[:L - specials] [end] [pad]...
#include "chorus/text/start_end_packer.h"

#include <algorithm>

#include "chorus/core/error.h"

namespace chorus::text {

StartEndPacker::StartEndPacker(StartEndPackerOptions options) : options_(options) {
  const int64_t specials = (options_.start_value ? 1 : 0) + (options_.end_value ? 1 : 0);
  if (options_.sequence_length <= specials) {
    throw_error<ValueError>("StartEndPacker: expected sequence_length > {} (the start and end ids). Received: "
                            "sequence_length={}",
                            specials, options_.sequence_length);
  }
}

void StartEndPacker::pack(std::span<const int32_t> ids, int32_t* token_ids, bool* padding_mask) const {
  const auto length = static_cast<size_t>(options_.sequence_length);
  size_t n = 0;
  if (options_.start_value) token_ids[n++] = *options_.start_value;
  const size_t room = length - n - (options_.end_value ? 1 : 0);
  const size_t take = std::min(room, ids.size());
  std::copy_n(ids.begin(), take, token_ids + n);
  n += take;
  if (options_.end_value) token_ids[n++] = *options_.end_value;
  std::fill(token_ids + n, token_ids + length, options_.pad_value);
  if (padding_mask != nullptr) {
    std::fill(padding_mask, padding_mask + n, true);
    std::fill(padding_mask + n, padding_mask + length, false);
  }
}

std::vector<int32_t> StartEndPacker::pack(std::span<const int32_t> ids) const {
  std::vector<int32_t> out(static_cast<size_t>(options_.sequence_length));
  pack(ids, out.data());
  return out;
}

Tree StartEndPacker::pack_batch(const std::vector<std::vector<int32_t>>& batch) const {
  const Shape shape{static_cast<int64_t>(batch.size()), options_.sequence_length};
  Tensor token_ids = Tensor::empty(shape, kInt32);
  Tensor padding_mask = Tensor::empty(shape, kBool);
  const auto length = static_cast<size_t>(options_.sequence_length);
  for (size_t b = 0; b < batch.size(); ++b) {
    pack(batch[b], token_ids.data<int32_t>() + b * length, padding_mask.data<bool>() + b * length);
  }
  return Tree{{"token_ids", token_ids}, {"padding_mask", padding_mask}};
}

}  // namespace chorus::text
