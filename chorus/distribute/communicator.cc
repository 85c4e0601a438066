#include "chorus/distribute/communicator.h"

#include <algorithm>
#include <cstring>

#include "chorus/core/creation.h"

namespace chorus::distribute {

void check_all_to_all_send(const std::vector<std::vector<std::byte>>& send, int size) {
  if (send.size() != static_cast<size_t>(size)) {
    throw_error<ValueError>("all_to_all: {} buffers to send for a group of {} participants", send.size(), size);
  }
}

std::vector<std::vector<std::byte>> Communicator::all_to_all(const std::vector<std::vector<std::byte>>& send) {
  const int n = size();
  check_all_to_all_send(send, n);
  // Every participant's sizes, each int64 as the bits of two float32 words (all_gather
  // copies bits), then every buffer padded to the largest.
  Tensor mine = Tensor::empty(Shape{2 * n}, kFloat32);
  auto* my_sizes = static_cast<int64_t*>(mine.raw_data());
  for (int r = 0; r < n; ++r) my_sizes[r] = static_cast<int64_t>(send[static_cast<size_t>(r)].size());
  Tensor sizes = Tensor::empty(Shape{2 * n * n}, kFloat32);
  all_gather(mine, sizes);
  const auto* size_of = static_cast<const int64_t*>(sizes.raw_data());  // [from * n + to]
  const int64_t largest = *std::max_element(size_of, size_of + static_cast<ptrdiff_t>(n) * n);
  const int64_t words = (largest + 3) / 4;
  std::vector<std::vector<std::byte>> received(static_cast<size_t>(n));
  if (words == 0) return received;
  Tensor blocks = zeros(Shape{n * words}, kFloat32);
  for (int r = 0; r < n; ++r) {
    const auto& part = send[static_cast<size_t>(r)];
    if (!part.empty()) std::memcpy(blocks.data<float>() + r * words, part.data(), part.size());
  }
  Tensor all = Tensor::empty(Shape{n * n * words}, kFloat32);
  all_gather(blocks, all);
  for (int from = 0; from < n; ++from) {
    const auto* begin = reinterpret_cast<const std::byte*>(all.data<float>() + (from * n + rank()) * words);
    received[static_cast<size_t>(from)].assign(begin, begin + size_of[from * n + rank()]);
  }
  return received;
}

}  // namespace chorus::distribute
