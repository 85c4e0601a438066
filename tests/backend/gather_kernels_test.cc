// The per-ISA row kernels behind take and its gradient: copies keep every bit (NaN
// payloads too), row adds give the bits of the scalar loop, duplicates in order; and the
// blockwise index check finds the first bad index.

#include "chorus/backend/cpu/gather_kernels.h"
#include "chorus/backend/cpu/gather_kernels_isa.h"

#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace chorus::backend::cpu {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1e3f, 1e3f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

template <class I>
std::vector<I> random_rows(size_t count, int64_t rows, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<I> v(count);
  for (I& i : v) i = static_cast<I>(gen() % static_cast<uint32_t>(rows));  // many duplicates
  return v;
}

template <class I>
void expect_rows_match_the_scalar_loops(const GatherKernelTable& t, auto gather, auto scatter) {
  constexpr int64_t kRows = 37, kCount = 300;
  for (const int64_t n : {1, 4, 5, 16, 32, 33, 100}) {
    SCOPED_TRACE(::testing::Message() << "n " << n << " index bytes " << sizeof(I));
    std::vector<float> table = random_floats(static_cast<size_t>(kRows * n), 1);
    const uint32_t nan_bits = 0x7fc0abcdu;
    std::memcpy(&table[static_cast<size_t>(n)], &nan_bits, 4);
    const std::vector<I> idx = random_rows<I>(kCount, kRows, 2);
    std::vector<float> out(static_cast<size_t>(kCount * n));
    (t.*gather)(reinterpret_cast<const uint32_t*>(table.data()), idx.data(), kCount, n,
                reinterpret_cast<uint32_t*>(out.data()));
    for (int64_t m = 0; m < kCount; ++m) {
      ASSERT_EQ(std::memcmp(&out[static_cast<size_t>(m * n)], &table[static_cast<size_t>(idx[m] * n)],
                            static_cast<size_t>(n) * 4),
                0);
    }
    const std::vector<float> g = random_floats(static_cast<size_t>(kCount * n), 3);
    std::vector<float> dx = random_floats(static_cast<size_t>(kRows * n), 4), want = dx;
    const int64_t lo = 5, hi = 30;  // one thread's rows
    (t.*scatter)(g.data(), idx.data(), kCount, n, lo, hi, dx.data());
    for (int64_t m = 0; m < kCount; ++m) {
      if (idx[m] < lo || idx[m] >= hi) continue;
      for (int64_t j = 0; j < n; ++j) want[static_cast<size_t>(idx[m] * n + j)] += g[static_cast<size_t>(m * n + j)];
    }
    EXPECT_EQ(std::memcmp(dx.data(), want.data(), dx.size() * 4), 0);
  }
}

TEST(GatherKernelsTest, RowCopiesAndAddsMatchTheScalarLoopsOnEveryIsa) {
  for (const Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    if (!isa_supported(isa)) continue;
    SCOPED_TRACE(isa_name(isa));
    const GatherKernelTable& t = gather_kernel_table(isa);
    expect_rows_match_the_scalar_loops<int32_t>(t, &GatherKernelTable::gather_rows32_i32,
                                                &GatherKernelTable::scatter_add_rows_i32);
    expect_rows_match_the_scalar_loops<int64_t>(t, &GatherKernelTable::gather_rows32_i64,
                                                &GatherKernelTable::scatter_add_rows_i64);
  }
}

TEST(GatherKernelsTest, FindOutOfRangeReportsTheFirstBadPositionInAnyBlock) {
  std::vector<int64_t> idx(1000, 3);
  EXPECT_EQ(find_out_of_range(idx.data(), 1000, 4), -1);
  idx[700] = -1;  // a later block: the clean blocks before it are skipped whole
  idx[900] = 4;
  EXPECT_EQ(find_out_of_range(idx.data(), 1000, 4), 700);
  idx[256] = int64_t{1} << 40;  // the first position of a block
  EXPECT_EQ(find_out_of_range(idx.data(), 1000, 4), 256);
  std::vector<int32_t> small(300, 0);
  small[299] = -2147483647 - 1;
  EXPECT_EQ(find_out_of_range(small.data(), 300, 1), 299);
  EXPECT_EQ(find_out_of_range(small.data(), 299, 1), -1);
}

}  // namespace
}  // namespace chorus::backend::cpu
