// Exact top-k selection for ops::top_k and retrieval: a running selection fed a row's
// scores in pieces, the row-wise top_k kernel built on it, and top-k of query-candidate
// dot products computed block by block. Ranking everywhere: larger first, a NaN above
// every number, the lower index first among equals (so results never depend on the scan
// order or the thread count). A TopKSelection is single-threaded; the functions are
// thread-safe and use the calling thread's intra-op threads.
#pragma once

#include <cstdint>
#include <vector>

#include "chorus/backend/cpu/top_k_kernels_isa.h"
#include "chorus/core/bfloat16.h"
#include "chorus/core/dtype.h"

namespace chorus::backend::cpu {

// The k best of the scores offered so far. Each piece's scores are compared with a running
// threshold, 64 at a time, and only those not below it are kept: the threshold starts at a
// bound the k-th best must reach (the k-th largest maximum of a few times k interleaved
// groups of the piece) and rises to the k-th best kept whenever the buffer fills. On a row
// of random scores about k of them pass.
class TopKSelection {
 public:
  // REQUIRES: k >= 1.
  explicit TopKSelection(int64_t k);

  int64_t k() const { return k_; }

  // Starts a new row.
  void clear();
  // Offers scores[0, n) as indices first, first + 1, ... REQUIRES: indices offered since
  // clear() are distinct and below 2^31.
  void add(const float* scores, int64_t n, int64_t first);
  void add(const bfloat16* scores, int64_t n, int64_t first);
  // The min(k, offered) best, best first (sorted) or in ascending index order, into
  // values/indices (either may be null). Leaves the selection to be cleared.
  template <class T, class I>
  void write(bool sorted, T* values, I* indices);

 private:
  template <class S>
  void add_scores(const S* scores, int64_t n, int64_t first);
  void cut_to_k();

  int64_t k_;
  float threshold_;
  bool complete_ = false;  // k NaNs kept: nothing offered later can rank above them
  std::vector<TopKCandidate> buffer_;
  size_t size_ = 0;
  const TopKKernelTable* table_;
};

// For each of `rows` rows of n elements: the k largest values and their indices, in
// descending order with ties broken by the lower index (sorted), or the same k entries
// in ascending index order (!sorted). A NaN counts as larger than any number.
// REQUIRES: 1 <= k <= n. T is float, bfloat16, int32_t or int64_t.
template <class T>
void top_k_rows(const T* x, int64_t rows, int64_t n, int64_t k, bool sorted, T* values, int64_t* indices);

// top_k_products' blocks: queries per block, and the bytes of a block's scores (in L2),
// so kTopKScoreBlockBytes / (kTopKQueryBlock * dtype size) candidates per block.
inline constexpr int64_t kTopKQueryBlock = 32;
inline constexpr int64_t kTopKScoreBlockBytes = int64_t{256} << 10;

// For each of the b queries (b, d): the k candidates (n, d) with the largest dot products,
// best first: their scores into values (b, k) (may be null) and their rows into indices
// (b, k). Threads take blocks of queries; each computes its block's scores against a
// block of candidates at a time (a few hundred KB, so they stay in cache) and feeds them
// to the queries' selections: the (b, n) score matrix never exists. dtype is kFloat32 or
// kBFloat16 (scores in it, accumulated in float32). REQUIRES: 1 <= k <= n < 2^31, d >= 1.
void top_k_products(DType dtype, const void* queries, int64_t b, const void* candidates, int64_t n, int64_t d,
                    int64_t k, void* values, int32_t* indices);

}  // namespace chorus::backend::cpu
