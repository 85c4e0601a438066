// One check of every collective for every ElementType, run by each rank of a group: the
// LocalCommunicator and Gloo tests share it, so both backends meet the same references.
// Values are chosen so that a trip through float32 would change them (doubles below
// float's precision, int64s above 2^53), and so that every sum is exact: Gloo's event-loop
// algorithms add in another order than rank order (identically on every rank).
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "chorus/comm/communicator.h"
#include "chorus/core/bfloat16.h"

namespace chorus::comm::typed_checks {

// Element i of rank r's input for type T: distinct per rank and element, with both signs.
template <class T>
T typed_value(int r, int64_t i) {
  const int64_t k = (i * 7 + r * 13) % 29 - 14;  // in [-14, 14]
  if constexpr (std::is_same_v<T, double>) {
    return 1.0 + std::ldexp(static_cast<double>(k), -40) + r * 0.25;  // 2^-40: below float32's resolution at 1
  } else if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(k) * 0.375f + static_cast<float>(r);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return bfloat16(static_cast<float>(k) * 0.5f + static_cast<float>(r) * 2.0f);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return (int64_t{1} << 60) / 8 + k * 1000003 + r;  // above 2^53: not exact as a double, let alone a float
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return static_cast<int32_t>(k * 100003 - r);
  } else {
    return static_cast<uint8_t>((k + 14) * 8 + r);  // bytes
  }
}

template <class T>
T reference_combine(ReduceOp op, T a, T b) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    const float x = static_cast<float>(a), y = static_cast<float>(b);
    return bfloat16(op == ReduceOp::kSum ? x + y : op == ReduceOp::kMax ? std::max(x, y) : std::min(x, y));
  } else {
    return op == ReduceOp::kSum ? static_cast<T>(a + b) : op == ReduceOp::kMax ? std::max(a, b) : std::min(a, b);
  }
}

template <class T>
bool same_element_bits(const std::vector<T>& got, const std::vector<T>& expected) {
  return got.size() == expected.size() &&
         (got.empty() || std::memcmp(got.data(), expected.data(), got.size() * sizeof(T)) == 0);
}

template <class T>
std::vector<T> rank_values(int r, int64_t n) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = typed_value<T>(r, i);
  return v;
}

// all_reduce, broadcast, all_gather and reduce_scatter of `n` elements of T.
template <class T>
void expect_typed(int rank, int size, int64_t n, Communicator& c) {
  SCOPED_TRACE(::testing::Message() << element_type_name(ElementTypeOf<T>::value) << " x " << n);
  const std::vector<ReduceOp> ops = ElementTypeOf<T>::value == ElementType::kBytes
                                        ? std::vector<ReduceOp>{ReduceOp::kMax, ReduceOp::kMin}
                                        : std::vector<ReduceOp>{ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin};
  // Every rank's n * size values, made once (the sanitizer tree's -O0 spent most of this
  // test making them): reduce_scatter's inputs, whose first n are the other collectives'.
  std::vector<std::vector<T>> wide;
  for (int r = 0; r < size; ++r) wide.push_back(rank_values<T>(r, n * size));
  const auto first_n = [&](int r) {
    return std::vector<T>(wide[static_cast<size_t>(r)].begin(), wide[static_cast<size_t>(r)].begin() + n);
  };
  // The reference reduction of every rank's elements [offset, offset + n).
  const auto reduced = [&](ReduceOp op, int64_t offset) {
    std::vector<T> out(wide[0].begin() + offset, wide[0].begin() + offset + n);
    for (int r = 1; r < size; ++r) {
      const std::vector<T>& theirs = wide[static_cast<size_t>(r)];
      for (size_t i = 0; i < out.size(); ++i) {
        out[i] = reference_combine(op, out[i], theirs[static_cast<size_t>(offset) + i]);
      }
    }
    return out;
  };
  for (ReduceOp op : ops) {
    std::vector<T> mine = first_n(rank);
    c.all_reduce(std::span(mine), op);
    EXPECT_TRUE(same_element_bits(mine, reduced(op, 0))) << "all_reduce op " << static_cast<int>(op);
  }
  const int root = size - 1;
  std::vector<T> value = first_n(rank);
  c.broadcast(std::span(value), root);
  EXPECT_TRUE(same_element_bits(value, first_n(root))) << "broadcast";
  std::vector<T> gathered(static_cast<size_t>(n * size)), expected_gather;
  for (int r = 0; r < size; ++r) {
    const std::vector<T> block = first_n(r);
    expected_gather.insert(expected_gather.end(), block.begin(), block.end());
  }
  std::vector<T> input = first_n(rank);
  c.all_gather(std::span(input), std::span(gathered));
  EXPECT_TRUE(same_element_bits(gathered, expected_gather)) << "all_gather";
  // reduce_scatter: rank r keeps block r of the reduction of every rank's n * size inputs.
  const ReduceOp op = ops.front();
  std::vector<T> scatter_in = wide[static_cast<size_t>(rank)], block(static_cast<size_t>(n));
  c.reduce_scatter(std::span(scatter_in), std::span(block), op);
  EXPECT_TRUE(same_element_bits(block, reduced(op, rank * n))) << "reduce_scatter";
}

// Every type in buffers of `bytes` bytes, then the variable-size gather of bytes and the
// refusals.
inline void expect_typed_collectives(int rank, int size, int64_t bytes, Communicator& c) {
  expect_typed<float>(rank, size, bytes / 4, c);
  expect_typed<double>(rank, size, bytes / 8, c);
  expect_typed<bfloat16>(rank, size, bytes / 2, c);
  expect_typed<int32_t>(rank, size, bytes / 4, c);
  expect_typed<int64_t>(rank, size, bytes / 8, c);
  expect_typed<uint8_t>(rank, size, bytes, c);
  // Rank r sends 3r bytes (rank 0 none).
  std::vector<std::byte> mine(static_cast<size_t>(3 * rank));
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<std::byte>(rank * 16 + static_cast<int>(i));
  const std::vector<std::vector<std::byte>> all = c.all_gather_bytes(mine);
  ASSERT_EQ(all.size(), static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    ASSERT_EQ(all[static_cast<size_t>(r)].size(), static_cast<size_t>(3 * r));
    for (size_t i = 0; i < all[static_cast<size_t>(r)].size(); ++i) {
      EXPECT_EQ(all[static_cast<size_t>(r)][i], static_cast<std::byte>(r * 16 + static_cast<int>(i)));
    }
  }
  std::vector<uint8_t> flags(4);
  EXPECT_THAT([&] { c.all_reduce(std::span(flags)); },
              ::testing::ThrowsMessage<ValueError>(::testing::HasSubstr(
                  "all_reduce: a sum of bytes (4 bytes) is refused: bytes are moved, not added")));
  c.barrier();  // the refusal consumed no collective: the group still agrees
}

}  // namespace chorus::comm::typed_checks
