// Drivers of the reductions: pick the ISA table, split (outer, reduced, inner) into tasks
// for parallel_for, and combine chunk partials. Splitting never changes float bits:
// work is cut along kept axes, or along the reduced axis into aligned subtrees of the
// fixed pairwise tree (see reduce_kernels_isa.h).
#include "chorus/backend/cpu/reduce_kernels.h"

#include <algorithm>
#include <cassert>
#include <type_traits>
#include <vector>

#include "chorus/backend/cpu/parallel.h"

namespace chorus::backend::cpu {
namespace {

constexpr int64_t kReduceGrain = 16384;  // elements of work per task: parallel from ~32K up
constexpr int64_t kColumns = kWideColumns;  // columns per task of a strided reduction
constexpr int64_t kIntColumns = 256;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t floor_pow2(int64_t v) { return int64_t{1} << (63 - __builtin_clzll(static_cast<uint64_t>(v))); }

template <bool kMax>
float pick(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return (kMax ? b > a : b < a) ? b : a;
}

float tree_sum(const float* parts, int64_t count, int64_t stride) {
  if (count == 1) return parts[0];
  const int64_t left = floor_pow2(count - 1);
  return tree_sum(parts, left, stride) + tree_sum(parts + left * stride, count - left, stride);
}

// A chunk length of leaf * 2^j items, at least min_items, that cuts n items into at most
// `want` chunks (and more than want / 2 when n allows).
int64_t chunk_length(int64_t n, int64_t leaf, int64_t want, int64_t min_items) {
  int64_t chunk = leaf;
  while (chunk < min_items) chunk *= 2;
  while (chunk < n && ceil_div(n, chunk) > want) chunk *= 2;
  return chunk;
}

auto contiguous_fn(const ReduceKernelTable& t, const float*) { return t.reduce_contiguous_f32; }
auto contiguous_fn(const ReduceKernelTable& t, const bfloat16*) { return t.reduce_contiguous_bf16; }
auto strided_fn(const ReduceKernelTable& t, const float*) { return t.reduce_strided_f32; }
auto strided_fn(const ReduceKernelTable& t, const bfloat16*) { return t.reduce_strided_bf16; }

// inner == 1: one row per output. Rows go to threads whole, unless there are too few
// rows; then each row is cut into aligned chunks whose partials are combined after.
template <class T>
void reduce_rows(const ReduceKernelTable& table, ReduceKind kind, const T* x, float* out, int64_t outer,
                 int64_t reduced) {
  const auto rows_fn = contiguous_fn(table, x);
  const int64_t want = 4 * intra_op_threads();
  if (intra_op_threads() <= 1 || outer * reduced < 2 * kReduceGrain || outer >= want || reduced < 2 * kReduceGrain) {
    parallel_for(outer, std::max<int64_t>(1, kReduceGrain / reduced),
                 [&](int64_t b, int64_t e) { rows_fn(kind, x + b * reduced, e - b, reduced, out + b); });
    return;
  }
  const int64_t chunk = chunk_length(reduced, kSumLeaf, ceil_div(want, outer), kReduceGrain);
  const int64_t chunks = ceil_div(reduced, chunk);
  std::vector<float> parts(static_cast<size_t>(outer * chunks));
  parallel_for(outer * chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t o = u / chunks, start = (u % chunks) * chunk;
      rows_fn(kind, x + o * reduced + start, 1, std::min(chunk, reduced - start), &parts[static_cast<size_t>(u)]);
    }
  });
  for (int64_t o = 0; o < outer; ++o) out[o] = combine_partials(kind, &parts[static_cast<size_t>(o * chunks)], chunks, 1);
}

// inner > 1: tasks are (outer, block of kColumns columns), and with too few of them the
// reduced axis is cut into aligned chunks of rows as well.
template <class T>
void reduce_columns(const ReduceKernelTable& table, ReduceKind kind, const T* x, float* out, int64_t outer,
                    int64_t reduced, int64_t inner) {
  const auto cols_fn = strided_fn(table, x);
  const int64_t blocks = ceil_div(inner, kColumns), units = outer * blocks;
  const int64_t want = 4 * intra_op_threads();
  auto run = [&](int64_t u, int64_t row0, int64_t rows, float* dst) {
    const int64_t o = u / blocks, c = (u % blocks) * kColumns;
    cols_fn(kind, x + (o * reduced + row0) * inner + c, rows, inner, std::min(kColumns, inner - c), dst + c);
  };
  if (intra_op_threads() <= 1 || outer * reduced * inner < 2 * kReduceGrain || units >= want || reduced < 4 * kRowLeaf) {
    parallel_for(units, std::max<int64_t>(1, kReduceGrain / (reduced * kColumns)), [&](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u) run(u, 0, reduced, out + (u / blocks) * inner);
    });
    return;
  }
  const int64_t chunk = chunk_length(reduced, kRowLeaf, ceil_div(want, units), std::max<int64_t>(kRowLeaf, kReduceGrain / inner));
  const int64_t chunks = ceil_div(reduced, chunk);
  std::vector<float> parts(static_cast<size_t>(outer * chunks * inner));
  parallel_for(units * chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w) {
      const int64_t u = w / chunks, k = w % chunks, o = u / blocks;
      run(u, k * chunk, std::min(chunk, reduced - k * chunk), &parts[static_cast<size_t>((o * chunks + k) * inner)]);
    }
  });
  parallel_for(outer * inner, kReduceGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t o = i / inner, j = i % inner;
      out[i] = combine_partials(kind, &parts[static_cast<size_t>(o * chunks * inner + j)], chunks, inner);
    }
  });
}

template <class T>
void reduce_float(ReduceKind kind, const T* x, float* out, int64_t outer, int64_t reduced, int64_t inner,
                  Isa isa) {
  assert(reduced >= 1);
  const ReduceKernelTable& table = reduce_kernel_table(isa);
  if (inner == 1) {
    reduce_rows(table, kind, x, out, outer, reduced);
  } else {
    reduce_columns(table, kind, x, out, outer, reduced, inner);
  }
}

// Calls fn(o, c0, c1) for every output row o and column block [c0, c1), in parallel.
template <class Fn>
void for_each_column_block(int64_t outer, int64_t reduced, int64_t inner, Fn&& fn) {
  const int64_t blocks = ceil_div(inner, kIntColumns);
  const int64_t work = reduced * std::min(inner, kIntColumns);
  parallel_for(outer * blocks, std::max<int64_t>(1, kReduceGrain / work), [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t c0 = (u % blocks) * kIntColumns;
      fn(u / blocks, c0, std::min(inner, c0 + kIntColumns));
    }
  });
}

template <class T>
T combine_int(ReduceKind kind, T a, T b) {
  using U = std::make_unsigned_t<T>;
  switch (kind) {
    case ReduceKind::kSum: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    case ReduceKind::kMax: return std::max(a, b);
    case ReduceKind::kMin: return std::min(a, b);
  }
  return a;
}

template <class T>
void reduce_int(ReduceKind kind, const T* x, T* out, int64_t outer, int64_t reduced, int64_t inner) {
  assert(reduced >= 1);
  for_each_column_block(outer, reduced, inner, [&](int64_t o, int64_t c0, int64_t c1) {
    const T* base = x + o * reduced * inner;
    T* dst = out + o * inner;
    for (int64_t j = c0; j < c1; ++j) dst[j] = base[j];
    for (int64_t r = 1; r < reduced; ++r) {
      for (int64_t j = c0; j < c1; ++j) dst[j] = combine_int(kind, dst[j], base[r * inner + j]);
    }
  });
}

// Whether v beats the current best: larger, or the first NaN.
template <class V>
bool beats(V v, V best) {
  if constexpr (std::is_floating_point_v<V>) {
    if (best != best) return false;
    if (v != v) return true;
  }
  return v > best;
}

template <class T>
void argmax_impl(const T* x, int64_t* out, int64_t outer, int64_t reduced, int64_t inner) {
  assert(reduced >= 1);
  using V = decltype(arithmetic_value(T{}));
  for_each_column_block(outer, reduced, inner, [&](int64_t o, int64_t c0, int64_t c1) {
    const T* base = x + o * reduced * inner;
    V best[kIntColumns];
    int64_t* dst = out + o * inner;
    for (int64_t j = c0; j < c1; ++j) {
      best[j - c0] = arithmetic_value(base[j]);
      dst[j] = 0;
    }
    for (int64_t r = 1; r < reduced; ++r) {
      for (int64_t j = c0; j < c1; ++j) {
        const V v = arithmetic_value(base[r * inner + j]);
        if (beats(v, best[j - c0])) {
          best[j - c0] = v;
          dst[j] = r;
        }
      }
    }
  });
}

// Whole rows to threads, through the vector kernel of the table.
template <class T>
void argmax_rows(void (*rows_fn)(const T*, int64_t, int64_t, int64_t*), const T* x, int64_t* out, int64_t rows,
                 int64_t n) {
  assert(n >= 1);
  parallel_for(rows, std::max<int64_t>(1, kReduceGrain / n),
               [&](int64_t b, int64_t e) { rows_fn(x + b * n, e - b, n, out + b); });
}

}  // namespace

const ReduceKernelTable& reduce_kernel_table(Isa isa) {
  assert(static_cast<int>(isa) <= static_cast<int>(best_isa()));
  switch (isa) {
    case Isa::kAvx512: return reduce_table_avx512();
    case Isa::kAvx2: return reduce_table_avx2();
    case Isa::kBaseline: break;
  }
  return reduce_table_baseline();
}

float combine_partials(ReduceKind kind, const float* parts, int64_t count, int64_t stride) {
  assert(count >= 1);
  if (kind == ReduceKind::kSum) return tree_sum(parts, count, stride);
  float r = parts[0];
  for (int64_t k = 1; k < count; ++k) {
    r = kind == ReduceKind::kMax ? pick<true>(r, parts[k * stride]) : pick<false>(r, parts[k * stride]);
  }
  return r;
}

void reduce(ReduceKind kind, const float* x, float* out, int64_t outer, int64_t reduced, int64_t inner,
            Isa isa) {
  reduce_float(kind, x, out, outer, reduced, inner, isa);
}
void reduce(ReduceKind kind, const bfloat16* x, float* out, int64_t outer, int64_t reduced, int64_t inner,
            Isa isa) {
  reduce_float(kind, x, out, outer, reduced, inner, isa);
}
void reduce(ReduceKind kind, const int32_t* x, int32_t* out, int64_t outer, int64_t reduced, int64_t inner) {
  reduce_int(kind, x, out, outer, reduced, inner);
}
void reduce(ReduceKind kind, const int64_t* x, int64_t* out, int64_t outer, int64_t reduced, int64_t inner) {
  reduce_int(kind, x, out, outer, reduced, inner);
}

void argmax(const float* x, int64_t* out, int64_t outer, int64_t reduced, int64_t inner, Isa isa) {
  if (inner != 1) return argmax_impl(x, out, outer, reduced, inner);
  argmax_rows(reduce_kernel_table(isa).argmax_rows_f32, x, out, outer, reduced);
}
void argmax(const bfloat16* x, int64_t* out, int64_t outer, int64_t reduced, int64_t inner, Isa isa) {
  if (inner != 1) return argmax_impl(x, out, outer, reduced, inner);
  argmax_rows(reduce_kernel_table(isa).argmax_rows_bf16, x, out, outer, reduced);
}
void argmax(const int32_t* x, int64_t* out, int64_t outer, int64_t reduced, int64_t inner) {
  argmax_impl(x, out, outer, reduced, inner);
}
void argmax(const int64_t* x, int64_t* out, int64_t outer, int64_t reduced, int64_t inner) {
  argmax_impl(x, out, outer, reduced, inner);
}

}  // namespace chorus::backend::cpu
