#include "chorus/comm/communicator.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "chorus/profiler/profiler.h"

namespace chorus::comm {
namespace {

class TracedWork final : public Work {
 public:
  TracedWork(const char* op, std::unique_ptr<Work> work) : event_(std::in_place, "collective", op), work_(std::move(work)) {}
  void wait() override {
    work_->wait();
    event_.reset();
  }

 private:
  std::optional<profiler::Scope> event_;
  std::unique_ptr<Work> work_;
};

}  // namespace

std::unique_ptr<Work> traced(const char* op, std::unique_ptr<Work> work) {
  if (!profiler::recording()) return work;
  return std::make_unique<TracedWork>(op, std::move(work));
}

size_t element_size(ElementType type) {
  switch (type) {
    case ElementType::kFloat32: return 4;
    case ElementType::kFloat64: return 8;
    case ElementType::kBFloat16: return 2;
    case ElementType::kInt32: return 4;
    case ElementType::kInt64: return 8;
    case ElementType::kBytes: return 1;
  }
  return 1;
}

const char* element_type_name(ElementType type) {
  static constexpr const char* kNames[] = {"float32", "float64", "bfloat16", "int32", "int64", "bytes"};
  return kNames[static_cast<int>(type)];
}

namespace {

ElementType element_type_of(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return ElementType::kFloat32;
    case DType::kBFloat16: return ElementType::kBFloat16;
    case DType::kInt32: return ElementType::kInt32;
    case DType::kInt64: return ElementType::kInt64;
    case DType::kBool:
    case DType::kUInt8:
    case DType::kString: break;
  }
  return ElementType::kBytes;
}

}  // namespace

Buffer::Buffer(Tensor t) : tensor(std::move(t)) {
  if (!tensor.defined()) {
    refused = "an undefined tensor";
  } else if (is_string(tensor.dtype())) {
    refused = fmt::format("a string tensor {}; collectives move numbers and bytes", tensor.shape().to_string());
  } else if (!tensor.device().is_cpu()) {
    refused = fmt::format("on {}; collectives here read CPU memory", tensor.device().to_string());
  } else {
    data = tensor.raw_data();
    count = tensor.numel();
    type = element_type_of(tensor.dtype());
  }
}

std::string describe_elements(int64_t count, ElementType type) {
  if (type == ElementType::kBytes) return fmt::format("{} bytes", count);
  return fmt::format("{} {} elements", count, element_type_name(type));
}

std::string Buffer::to_string() const { return describe_elements(count, type); }

void check_buffer(const char* op, const char* what, const Buffer& buffer) {
  if (buffer.refused.empty()) return;
  if (buffer.tensor.defined() && is_string(buffer.tensor.dtype())) {
    throw_error<DTypeError>("{}: {} is {}", op, what, buffer.refused);
  }
  throw_error<ValueError>("{}: {} is {}", op, what, buffer.refused);
}

void check_reduction(const char* op, const Buffer& buffer, ReduceOp reduce) {
  if (buffer.type == ElementType::kBytes && reduce == ReduceOp::kSum) {
    throw_error<ValueError>("{}: a sum of bytes ({}) is refused: bytes are moved, not added; use max or min, or an "
                            "integer type",
                            op, buffer.to_string());
  }
}

void check_blocks(const char* op, const char* big_name, const Buffer& big, const char* small_name,
                  const Buffer& small, int size) {
  if (big.type != small.type) {
    throw_error<DTypeError>("{}: {} holds {} and {} {}; expected one type", op, big_name, element_type_name(big.type),
                            small_name, element_type_name(small.type));
  }
  if (big.count != size * small.count) {
    throw_error<ShapeError>("{}: expected {} with {} x {} = {} elements (ranks x {} elements), got {}", op, big_name,
                            size, small.count, size * small.count, small_name, big.count);
  }
}

void check_all_to_all_send(const std::vector<std::vector<std::byte>>& send, int size) {
  if (send.size() != static_cast<size_t>(size)) {
    throw_error<ValueError>("all_to_all: {} buffers to send for a group of {} participants", send.size(), size);
  }
}

std::vector<std::vector<std::byte>> Communicator::all_gather_bytes(std::span<const std::byte> mine) {
  const int n = size();
  int64_t my_size = static_cast<int64_t>(mine.size());
  std::vector<int64_t> sizes(static_cast<size_t>(n));
  all_gather(std::span(&my_size, 1), std::span(sizes));
  const int64_t largest = *std::max_element(sizes.begin(), sizes.end());
  std::vector<std::vector<std::byte>> received(static_cast<size_t>(n));
  if (largest == 0) return received;
  std::vector<std::byte> padded(static_cast<size_t>(largest));
  std::copy(mine.begin(), mine.end(), padded.begin());
  std::vector<std::byte> all(static_cast<size_t>(n * largest));
  all_gather(std::span(padded), std::span(all));
  for (int r = 0; r < n; ++r) {
    const auto begin = all.begin() + r * largest;
    received[static_cast<size_t>(r)].assign(begin, begin + sizes[static_cast<size_t>(r)]);
  }
  return received;
}

std::vector<std::vector<std::byte>> Communicator::all_to_all(const std::vector<std::vector<std::byte>>& send) {
  const int n = size();
  check_all_to_all_send(send, n);
  // Every participant's sizes ([from * n + to]), then every buffer padded to the largest.
  std::vector<int64_t> my_sizes(static_cast<size_t>(n));
  for (size_t r = 0; r < send.size(); ++r) my_sizes[r] = static_cast<int64_t>(send[r].size());
  std::vector<int64_t> size_of(static_cast<size_t>(n) * n);
  all_gather(std::span(my_sizes), std::span(size_of));
  const int64_t largest = *std::max_element(size_of.begin(), size_of.end());
  std::vector<std::vector<std::byte>> received(static_cast<size_t>(n));
  if (largest == 0) return received;
  std::vector<std::byte> blocks(static_cast<size_t>(n * largest));
  for (int r = 0; r < n; ++r) {
    const auto& part = send[static_cast<size_t>(r)];
    std::copy(part.begin(), part.end(), blocks.begin() + r * largest);
  }
  std::vector<std::byte> all(static_cast<size_t>(n) * blocks.size());
  all_gather(std::span(blocks), std::span(all));
  for (int from = 0; from < n; ++from) {
    const auto begin = all.begin() + (from * n + rank()) * largest;
    received[static_cast<size_t>(from)].assign(begin, begin + size_of[static_cast<size_t>(from * n + rank())]);
  }
  return received;
}

}  // namespace chorus::comm
