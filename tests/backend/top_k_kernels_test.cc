// Top-k selection against a full sort (score descending, NaN first, lower index first
// among equals): on every ISA, for k in {1, 10, 100}, rows around the scan's and the
// blocks' sizes, scores offered whole or in pieces, float32 and bfloat16; and the
// blockwise query-candidate products against products and a sort done here.
#include "chorus/backend/cpu/top_k_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "chorus/backend/cpu/parallel.h"

namespace chorus::backend::cpu {
namespace {

// Scores from a few integer levels, so ties are everywhere; some NaNs and infinities.
std::vector<float> scores_with_ties(int64_t n, uint32_t seed, int levels) {
  std::mt19937 gen(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) {
    const uint32_t r = gen() % 1000;
    x = r < 3 ? std::numeric_limits<float>::quiet_NaN()
        : r < 5 ? -std::numeric_limits<float>::infinity()
                : static_cast<float>(static_cast<int>(gen() % static_cast<uint32_t>(levels)) - levels / 2);
  }
  return v;
}

std::vector<int64_t> sorted_order(const std::vector<float>& row, int64_t k) {
  std::vector<int64_t> order(row.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const bool an = std::isnan(row[a]), bn = std::isnan(row[b]);
    if (an || bn) return an && !bn;
    return row[a] > row[b];
  });
  order.resize(static_cast<size_t>(std::min<int64_t>(k, static_cast<int64_t>(row.size()))));
  return order;
}

// Offers `row` in pieces of the given sizes (cycled), then reads the sorted result.
template <class T>
std::vector<int64_t> select(const std::vector<T>& row, int64_t k, const std::vector<int64_t>& pieces) {
  TopKSelection selection(k);
  selection.clear();
  const auto n = static_cast<int64_t>(row.size());
  for (int64_t at = 0, p = 0; at < n; ++p) {
    const int64_t size = std::min(pieces[static_cast<size_t>(p) % pieces.size()], n - at);
    selection.add(row.data() + at, size, at);
    at += size;
  }
  std::vector<int64_t> indices(static_cast<size_t>(std::min(k, n)));
  selection.write<T, int64_t>(true, nullptr, indices.data());
  return indices;
}

TEST(TopKKernelsTest, SelectionMatchesAFullSortOnEveryIsaAroundTheBlockSizes) {
  const int64_t block = kTopKScoreBlockBytes / (kTopKQueryBlock * 4);
  for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    if (!isa_supported(isa)) continue;
    ScopedIsaOverride guard(isa);
    for (int64_t k : {1, 10, 100}) {
      for (int64_t n : {int64_t{1}, int64_t{63}, int64_t{64}, int64_t{65}, 16 * k - 1, 16 * k, int64_t{1683},
                        block - 1, block, block + 1, 3 * block + 17}) {
        for (int levels : {7, 100000}) {
          SCOPED_TRACE(::testing::Message() << isa_name(isa) << " k " << k << " n " << n << " levels " << levels);
          const std::vector<float> row = scores_with_ties(n, static_cast<uint32_t>(n * 31 + k + levels), levels);
          const std::vector<int64_t> want = sorted_order(row, k);
          ASSERT_EQ(select(row, k, {n}), want);
          ASSERT_EQ(select(row, k, {block, 1, 700, 64}), want);
          std::vector<bfloat16> row16(row.size());
          std::vector<float> rounded(row.size());
          for (size_t i = 0; i < row.size(); ++i) rounded[i] = static_cast<float>(row16[i] = bfloat16(row[i]));
          ASSERT_EQ(select(row16, k, {n}), sorted_order(rounded, k));
        }
      }
    }
  }
}

TEST(TopKKernelsTest, KNaNsEndTheScanAndLaterNaNsRankBelowThem) {
  std::vector<float> row(5000, 1.0f);
  for (int64_t i : {4000, 10, 2000, 4999}) row[static_cast<size_t>(i)] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(select(row, 3, {600}), (std::vector<int64_t>{10, 2000, 4000}));
  EXPECT_EQ(select(row, 5, {600}), (std::vector<int64_t>{10, 2000, 4000, 4999, 0}));
}

TEST(TopKKernelsTest, UnsortedResultsAreTheSameEntriesInIndexOrder) {
  const std::vector<float> row = scores_with_ties(3000, 5, 50);
  std::vector<int64_t> want = sorted_order(row, 10);
  std::sort(want.begin(), want.end());
  TopKSelection selection(10);
  selection.add(row.data(), 3000, 0);
  std::vector<int32_t> indices(10);
  std::vector<float> values(10);
  selection.write<float, int32_t>(false, values.data(), indices.data());
  for (size_t j = 0; j < 10; ++j) {
    EXPECT_EQ(indices[j], want[j]);
    EXPECT_TRUE(values[j] == row[want[j]] || (std::isnan(values[j]) && std::isnan(row[want[j]])));
  }
}

// Integer-valued queries and candidates: every dot product is exact, and ties are common.
std::vector<float> integer_matrix(int64_t rows, int64_t d, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(static_cast<size_t>(rows * d));
  for (float& x : v) x = static_cast<float>(static_cast<int>(gen() % 7) - 3);
  return v;
}

TEST(TopKKernelsTest, ProductsMatchTheProductsSortedForQueryAndCandidateCountsAroundTheBlocks) {
  const int64_t d = 3, block = kTopKScoreBlockBytes / (kTopKQueryBlock * 4);
  for (int64_t b : {int64_t{1}, kTopKQueryBlock - 1, kTopKQueryBlock, kTopKQueryBlock + 1, 3 * kTopKQueryBlock + 5}) {
    for (int64_t n : {int64_t{100}, block - 1, block, block + 1, 2 * block + 7}) {
      SCOPED_TRACE(::testing::Message() << "b " << b << " n " << n);
      std::vector<float> q = integer_matrix(b, d, static_cast<uint32_t>(b)), c = integer_matrix(n, d, 99);
      // Positive queries, and the candidates on either side of each block edge and the last
      // one better than all others: a block dropped or cut short loses them.
      for (float& x : q) x = std::abs(x) + 1;
      for (int64_t edge : {block - 1, block, 2 * block - 1, 2 * block, n - 1}) {
        if (edge < n) std::fill_n(c.begin() + edge * d, d, 4.0f);
      }
      const int64_t k = 10;
      std::vector<float> values(static_cast<size_t>(b * k));
      std::vector<int32_t> indices(static_cast<size_t>(b * k));
      top_k_products(kFloat32, q.data(), b, c.data(), n, d, k, values.data(), indices.data());
      for (int64_t r = 0; r < b; ++r) {
        std::vector<float> scores(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t i = 0; i < d; ++i) scores[static_cast<size_t>(j)] += q[r * d + i] * c[j * d + i];
        }
        const std::vector<int64_t> want = sorted_order(scores, k);
        for (int64_t j = 0; j < k; ++j) {
          ASSERT_EQ(indices[static_cast<size_t>(r * k + j)], want[static_cast<size_t>(j)]) << "query " << r;
          ASSERT_EQ(values[static_cast<size_t>(r * k + j)], scores[want[static_cast<size_t>(j)]]);
        }
      }
    }
  }
}

TEST(TopKKernelsTest, ProductsDoNotDependOnTheThreadCount) {
  const int64_t b = 300, n = 5000, d = 16, k = 20;
  std::mt19937 gen(3);
  std::normal_distribution<float> normal;
  std::vector<float> q(static_cast<size_t>(b * d)), c(static_cast<size_t>(n * d));
  for (float& x : q) x = normal(gen);
  for (float& x : c) x = normal(gen);
  std::vector<int32_t> serial(static_cast<size_t>(b * k)), parallel(serial.size());
  const int saved = intra_op_threads();
  set_intra_op_threads(1);
  top_k_products(kFloat32, q.data(), b, c.data(), n, d, k, nullptr, serial.data());
  set_intra_op_threads(2);
  top_k_products(kFloat32, q.data(), b, c.data(), n, d, k, nullptr, parallel.data());
  set_intra_op_threads(saved);
  EXPECT_EQ(serial, parallel);
}

}  // namespace
}  // namespace chorus::backend::cpu
