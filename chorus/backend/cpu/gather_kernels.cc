#include "chorus/backend/cpu/gather_kernels.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "chorus/backend/cpu/gather_kernels_isa.h"
#include "chorus/backend/cpu/parallel.h"

namespace chorus::backend::cpu {
namespace {

constexpr int64_t kGatherGrain = 32768;  // elements of work per task
// Bytes of row copies per task: a copy moves ~20 GB/s, so a task below this is shorter
// than waking a second thread and handing the rows' cache lines to it.
constexpr int64_t kCopyGrainBytes = int64_t{256} << 10;

// Gathers rows of one fixed-size element type T (row_bytes == sizeof(T)).
template <class T, class I>
void gather_elements(const void* x, int64_t axis_size, const I* idx, int64_t count, void* out, int64_t b,
                     int64_t e) {
  const T* src = static_cast<const T*>(x);
  T* dst = static_cast<T*>(out);
  for (int64_t u = b; u < e; ++u) dst[u] = src[(u / count) * axis_size + idx[u % count]];
}

auto gather_fn(const GatherKernelTable& t, const int32_t*) { return t.gather_rows32_i32; }
auto gather_fn(const GatherKernelTable& t, const int64_t*) { return t.gather_rows32_i64; }
auto scatter_fn(const GatherKernelTable& t, const int32_t*) { return t.scatter_add_rows_i32; }
auto scatter_fn(const GatherKernelTable& t, const int64_t*) { return t.scatter_add_rows_i64; }

}  // namespace

const GatherKernelTable& gather_kernel_table(Isa isa) {
  assert(static_cast<int>(isa) <= static_cast<int>(best_isa()));
  switch (isa) {
    case Isa::kAvx512: return gather_table_avx512();
    case Isa::kAvx2: return gather_table_avx2();
    case Isa::kBaseline: break;
  }
  return gather_table_baseline();
}

template <class I>
int64_t find_out_of_range(const I* idx, int64_t count, int64_t size) {
  // Blocks tested by the ISA's vectors (a negative index is a huge unsigned one), then
  // the bad block searched for its first bad position. Compared in I's own width (int32
  // indices stay 32-bit lanes): a size beyond I's range leaves only the negative indices
  // out, which are exactly those >= 2^(bits - 1).
  using U = std::make_unsigned_t<I>;
  constexpr auto kMax = static_cast<int64_t>(std::numeric_limits<I>::max());
  const U limit = size > kMax ? static_cast<U>(static_cast<U>(kMax) + 1) : static_cast<U>(size);
  const GatherKernelTable& table = gather_kernel_table(active_isa());
  int64_t block;
  if constexpr (std::is_same_v<I, int32_t>) {
    block = table.first_bad_block_i32(idx, count, limit);
  } else {
    block = table.first_bad_block_i64(idx, count, limit);
  }
  if (block < 0) return -1;
  for (int64_t m = block; m < count; ++m) {
    if (idx[m] < 0 || static_cast<int64_t>(idx[m]) >= size) return m;
  }
  return -1;
}

template <class I>
void gather_rows(const void* x, int64_t outer, int64_t axis_size, int64_t row_bytes, const I* idx, int64_t count,
                 void* out) {
  const int64_t total = outer * count;
  if (row_bytes % 4 == 0 && row_bytes >= 16) {
    // Rows of 4-byte words through the ISA's vector copies (an embedding lookup): the
    // generic path below pays a division and a memcpy call per row.
    const auto fn = gather_fn(gather_kernel_table(active_isa()), idx);
    const int64_t n = row_bytes / 4;
    const auto* src = static_cast<const uint32_t*>(x);
    auto* dst = static_cast<uint32_t*>(out);
    parallel_for(total, std::max<int64_t>(1, kCopyGrainBytes / row_bytes), [&](int64_t b, int64_t e) {
      for (int64_t u = b; u < e;) {
        const int64_t p = u / count, m = u % count, len = std::min(e - u, count - m);
        fn(src + p * axis_size * n, idx + m, len, n, dst + u * n);
        u += len;
      }
    });
    return;
  }
  parallel_for(total, std::max<int64_t>(1, kCopyGrainBytes / row_bytes), [&](int64_t b, int64_t e) {
    switch (row_bytes) {
      case 1: return gather_elements<uint8_t>(x, axis_size, idx, count, out, b, e);
      case 2: return gather_elements<uint16_t>(x, axis_size, idx, count, out, b, e);
      case 4: return gather_elements<uint32_t>(x, axis_size, idx, count, out, b, e);
      case 8: return gather_elements<uint64_t>(x, axis_size, idx, count, out, b, e);
      default: break;
    }
    const char* src = static_cast<const char*>(x);
    char* dst = static_cast<char*>(out);
    for (int64_t u = b; u < e; ++u) {
      const int64_t row = (u / count) * axis_size + idx[u % count];
      std::memcpy(dst + u * row_bytes, src + row * row_bytes, static_cast<size_t>(row_bytes));
    }
  });
}

template <class I>
void scatter_add_rows(const float* g, int64_t outer, int64_t count, int64_t row_len, const I* idx, int64_t axis_size,
                      float* dx) {
  // Threads own disjoint ranges of destination rows and each scans every index, taking
  // those that land in its range: no races, and updates keep their order.
  const int64_t rows = outer * axis_size;
  const int64_t work = outer * count * row_len;
  const auto fn = scatter_fn(gather_kernel_table(active_isa()), idx);
  parallel_for(rows, work < 2 * kGatherGrain ? rows : 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b / axis_size; p < outer && p * axis_size < e; ++p) {
      const int64_t lo = std::max(b, p * axis_size) - p * axis_size;
      const int64_t hi = std::min(e, (p + 1) * axis_size) - p * axis_size;
      fn(g + p * count * row_len, idx, count, row_len, lo, hi, dx + p * axis_size * row_len);
    }
  });
}

template <class I>
void one_hot(const I* idx, int64_t count, int64_t classes, size_t elem_size, const void* one, void* out) {
  const int64_t es = static_cast<int64_t>(elem_size);
  char* o = static_cast<char*>(out);
  parallel_for(count, std::max<int64_t>(1, kGatherGrain / classes), [&](int64_t b, int64_t e) {
    std::memset(o + b * classes * es, 0, static_cast<size_t>((e - b) * classes * es));
    for (int64_t i = b; i < e; ++i) {
      const int64_t c = idx[i];
      if (c >= 0 && c < classes) std::memcpy(o + (i * classes + c) * es, one, elem_size);
    }
  });
}

void scatter_rows(const float* g, const int64_t* idx, int64_t rows, int64_t k, int64_t n, float* dx) {
  parallel_for(rows, std::max<int64_t>(1, kGatherGrain / (k + n)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      for (int64_t j = 0; j < k; ++j) dx[r * n + idx[r * k + j]] += g[r * k + j];
    }
  });
}

template int64_t find_out_of_range(const int32_t*, int64_t, int64_t);
template int64_t find_out_of_range(const int64_t*, int64_t, int64_t);
template void gather_rows(const void*, int64_t, int64_t, int64_t, const int32_t*, int64_t, void*);
template void gather_rows(const void*, int64_t, int64_t, int64_t, const int64_t*, int64_t, void*);
template void scatter_add_rows(const float*, int64_t, int64_t, int64_t, const int32_t*, int64_t, float*);
template void scatter_add_rows(const float*, int64_t, int64_t, int64_t, const int64_t*, int64_t, float*);
template void one_hot(const int32_t*, int64_t, int64_t, size_t, const void*, void*);
template void one_hot(const int64_t*, int64_t, int64_t, size_t, const void*, void*);

}  // namespace chorus::backend::cpu
