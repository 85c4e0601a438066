#include "chorus/backend/cpu/top_k_kernels.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <type_traits>

#include "chorus/backend/cpu/matmul.h"
#include "chorus/backend/cpu/parallel.h"

namespace chorus::backend::cpu {
namespace {

constexpr int64_t kRowGrain = 32768;  // scores of work per task in top_k_rows
// Free slots the buffer keeps for a scan (a piece longer than that is scanned in spans).
constexpr size_t kScanRoom = 512;
// A piece gives a starting bound only if each group holds this many scores: on fewer the
// bound is weak and the maxima cost as much as the scan.
constexpr int64_t kMinGroupSize = 4;

// A function object, so that the sorts inline it.
struct RanksBefore {
  bool operator()(const TopKCandidate& a, const TopKCandidate& b) const { return a.order < b.order; }
};

// The k-th largest of maxima[0, groups), or a value below it that still has k maxima at or
// above it. Counting, for each maximum, the maxima not below it is branch-free and on 16
// or 32 values cheaper than nth_element's mispredicted partitions.
float kth_largest(float* maxima, int64_t groups, int64_t k) {
  if (groups > 32) {
    std::nth_element(maxima, maxima + k - 1, maxima + groups, std::greater<>());
    return maxima[k - 1];
  }
  float best = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < groups; ++i) {
    int64_t at_or_above = 0;
    for (int64_t j = 0; j < groups; ++j) at_or_above += maxima[j] >= maxima[i] ? 1 : 0;
    best = at_or_above >= k && maxima[i] > best ? maxima[i] : best;
  }
  return best;
}

const uint16_t* bits_of(const bfloat16* x) { return reinterpret_cast<const uint16_t*>(x); }

}  // namespace

const TopKKernelTable& top_k_kernel_table(Isa isa) {
  assert(static_cast<int>(isa) <= static_cast<int>(best_isa()));
  switch (isa) {
    case Isa::kAvx512: return top_k_table_avx512();
    case Isa::kAvx2: return top_k_table_avx2();
    case Isa::kBaseline: break;
  }
  return top_k_table_baseline();
}

TopKSelection::TopKSelection(int64_t k)
    : k_(k), buffer_(2 * static_cast<size_t>(k) + kScanRoom), table_(&top_k_kernel_table(active_isa())) {
  assert(k >= 1);
  clear();
}

void TopKSelection::clear() {
  threshold_ = -std::numeric_limits<float>::infinity();
  complete_ = false;
  size_ = 0;
}

void TopKSelection::add(const float* scores, int64_t n, int64_t first) { add_scores(scores, n, first); }
void TopKSelection::add(const bfloat16* scores, int64_t n, int64_t first) { add_scores(bits_of(scores), n, first); }

template <class S>
void TopKSelection::add_scores(const S* scores, int64_t n, int64_t first) {
  constexpr bool kFloat = std::is_same_v<S, float>;
  if (complete_ || n <= 0) return;
  // Each of `groups` interleaved groups holds its maximum, so k groups' maxima rank at
  // least as high as the k-th largest maximum: the k-th best cannot be below it. With
  // 1.5k to 3k groups about 1.5k scores of a random row pass it, and choosing the k-th
  // maximum stays cheaper than the scan.
  int64_t groups = 16;
  while (groups < k_ + k_ / 2) groups *= 2;
  if (groups <= kTopKMaxGroups && n >= kMinGroupSize * groups) {
    float maxima[kTopKMaxGroups];
    if constexpr (kFloat) {
      table_->group_maxima_f32(scores, n, groups, maxima);
    } else {
      table_->group_maxima_bf16(scores, n, groups, maxima);
    }
    threshold_ = std::max(threshold_, kth_largest(maxima, groups, k_));
  }
  for (int64_t j = 0; j < n && !complete_;) {
    if (buffer_.size() - size_ < kScanRoom / 2) cut_to_k();
    const int64_t span = std::min<int64_t>(n - j, static_cast<int64_t>(buffer_.size() - size_));
    const auto at = static_cast<int32_t>(first + j);
    TopKCandidate* out = buffer_.data() + size_;
    if constexpr (kFloat) {
      size_ += static_cast<size_t>(table_->collect_f32(scores + j, span, threshold_, at, out));
    } else {
      size_ += static_cast<size_t>(table_->collect_bf16(scores + j, span, threshold_, at, out));
    }
    j += span;
  }
}

void TopKSelection::cut_to_k() {
  const auto k = static_cast<size_t>(k_);
  if (size_ <= k) return;
  std::nth_element(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(k - 1),
                   buffer_.begin() + static_cast<std::ptrdiff_t>(size_), RanksBefore{});
  size_ = k;
  // Anything offered later has a higher index, so it must beat the k-th best outright.
  threshold_ = buffer_[k - 1].score;
  complete_ = std::isnan(threshold_);
}

template <class T, class I>
void TopKSelection::write(bool sorted, T* values, I* indices) {
  const auto k = static_cast<size_t>(k_);
  if (size_ > 2 * k) cut_to_k();  // else sorting them all is as cheap
  const auto end = buffer_.begin() + static_cast<std::ptrdiff_t>(size_);
  std::sort(buffer_.begin(), end, RanksBefore{});
  const size_t count = std::min(size_, k);
  if (!sorted) {
    std::sort(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(count),
              [](const TopKCandidate& a, const TopKCandidate& b) { return a.index() < b.index(); });
  }
  for (size_t j = 0; j < count; ++j) {
    if (values != nullptr) values[j] = static_cast<T>(buffer_[j].score);
    if (indices != nullptr) indices[j] = static_cast<I>(buffer_[j].index());
  }
}

template void TopKSelection::write(bool, float*, int32_t*);
template void TopKSelection::write(bool, float*, int64_t*);
template void TopKSelection::write(bool, bfloat16*, int32_t*);
template void TopKSelection::write(bool, bfloat16*, int64_t*);

namespace {

// The integer rows of top_k_rows: a partial sort of the row's positions.
template <class T>
void top_k_integer_rows(const T* x, int64_t rows, int64_t n, int64_t k, bool sorted, T* values, int64_t* indices) {
  parallel_for(rows, std::max<int64_t>(1, kRowGrain / n), [&](int64_t b, int64_t e) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t r = b; r < e; ++r) {
      const T* row = x + r * n;
      auto before = [row](int64_t i, int64_t j) { return row[i] != row[j] ? row[i] > row[j] : i < j; };
      std::iota(order.begin(), order.end(), int64_t{0});
      if (sorted) {
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      } else {
        if (k < n) std::nth_element(order.begin(), order.begin() + k, order.end(), before);
        std::sort(order.begin(), order.begin() + k);
      }
      for (int64_t j = 0; j < k; ++j) {
        values[r * k + j] = row[order[static_cast<size_t>(j)]];
        indices[r * k + j] = order[static_cast<size_t>(j)];
      }
    }
  });
}

}  // namespace

template <class T>
void top_k_rows(const T* x, int64_t rows, int64_t n, int64_t k, bool sorted, T* values, int64_t* indices) {
  if constexpr (std::is_integral_v<T>) {
    top_k_integer_rows(x, rows, n, k, sorted, values, indices);
  } else {
    assert(n <= std::numeric_limits<int32_t>::max());
    parallel_for(rows, std::max<int64_t>(1, kRowGrain / n), [&](int64_t b, int64_t e) {
      TopKSelection selection(k);
      for (int64_t r = b; r < e; ++r) {
        selection.clear();
        selection.add(x + r * n, n, 0);
        selection.write<T, int64_t>(sorted, nullptr, indices + r * k);
        // The values are copied from the row, not widened and narrowed back: NaN payloads stay.
        for (int64_t j = 0; j < k; ++j) values[r * k + j] = x[r * n + indices[r * k + j]];
      }
    });
  }
}

template void top_k_rows(const float*, int64_t, int64_t, int64_t, bool, float*, int64_t*);
template void top_k_rows(const bfloat16*, int64_t, int64_t, int64_t, bool, bfloat16*, int64_t*);
template void top_k_rows(const int32_t*, int64_t, int64_t, int64_t, bool, int32_t*, int64_t*);
template void top_k_rows(const int64_t*, int64_t, int64_t, int64_t, bool, int64_t*, int64_t*);

namespace {

// Queries [r0, r0 + rows) against every candidate, a block of candidates at a time.
template <class T>
void top_k_products_block(const T* queries, int64_t r0, int64_t rows, const T* candidates, int64_t n, int64_t d,
                          int64_t candidate_block, std::vector<TopKSelection>& selections, T* scores, T* values,
                          int32_t* indices) {
  for (int64_t r = 0; r < rows; ++r) selections[static_cast<size_t>(r)].clear();
  for (int64_t c0 = 0; c0 < n; c0 += candidate_block) {
    const int64_t columns = std::min(candidate_block, n - c0);
    MatmulProblem p;  // (rows, d) @ (d, columns): the candidates' rows read as columns
    p.dtype = std::is_same_v<T, float> ? kFloat32 : kBFloat16;
    p.a_dims = {rows, d};
    p.a_strides = {d, 1};
    p.b_dims = {d, columns};
    p.b_strides = {1, d};
    p.c_dims = {rows, columns};
    matmul(p, queries + r0 * d, candidates + c0 * d, scores);
    for (int64_t r = 0; r < rows; ++r) selections[static_cast<size_t>(r)].add(scores + r * columns, columns, c0);
  }
  const int64_t k = selections.front().k();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t out = (r0 + r) * k;
    selections[static_cast<size_t>(r)].write(true, values == nullptr ? nullptr : values + out, indices + out);
  }
}

template <class T>
void top_k_products_typed(const T* queries, int64_t b, const T* candidates, int64_t n, int64_t d, int64_t k, T* values,
                          int32_t* indices) {
  const int64_t candidate_block =
      std::clamp<int64_t>(kTopKScoreBlockBytes / (kTopKQueryBlock * static_cast<int64_t>(sizeof(T))), 1, n);
  const int64_t blocks = (b + kTopKQueryBlock - 1) / kTopKQueryBlock;
  parallel_for(blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<TopKSelection> selections(static_cast<size_t>(kTopKQueryBlock), TopKSelection(k));
    const auto scores = std::make_unique<T[]>(static_cast<size_t>(kTopKQueryBlock * candidate_block));
    for (int64_t block = begin; block < end; ++block) {
      const int64_t r0 = block * kTopKQueryBlock;
      top_k_products_block(queries, r0, std::min(kTopKQueryBlock, b - r0), candidates, n, d, candidate_block, selections,
                           scores.get(), values, indices);
    }
  });
}

}  // namespace

void top_k_products(DType dtype, const void* queries, int64_t b, const void* candidates, int64_t n, int64_t d,
                    int64_t k, void* values, int32_t* indices) {
  assert(k >= 1 && k <= n && n <= std::numeric_limits<int32_t>::max() && d >= 1);
  if (b <= 0) return;
  if (dtype == kFloat32) {
    top_k_products_typed(static_cast<const float*>(queries), b, static_cast<const float*>(candidates), n, d, k,
                         static_cast<float*>(values), indices);
  } else {
    top_k_products_typed(static_cast<const bfloat16*>(queries), b, static_cast<const bfloat16*>(candidates), n, d, k,
                         static_cast<bfloat16*>(values), indices);
  }
}

}  // namespace chorus::backend::cpu
