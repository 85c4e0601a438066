#include "chorus/backend/cpu/copy_kernels.h"

#include <emmintrin.h>
#include <xmmintrin.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>
#include <vector>

#include "chorus/backend/cpu/parallel.h"

namespace chorus::backend::cpu {
namespace {

// Bytes one thread should copy at least before another thread is worth waking
// (a fork/join costs a few microseconds; memcpy moves ~15 GB/s per core).
constexpr int64_t kParallelGrainBytes = int64_t{128} << 10;
// Edges of the square tiles of a 2-D transpose, in elements. An L1 tile of 16 x 16
// floats is one cache line per row on each side; an L2 block of 128 x 128 keeps the lines
// a column strip of tiles shares in cache, and is the unit of parallel work. Measured on
// the 2-core dev machine: 16/128 beat 8, 32 and unblocked tiles at every size tried
// (power-of-two leading dimensions are the hard case: every row maps to one L1 set).
constexpr int64_t kTile = 16;
constexpr int64_t kBlock = 128;

// Calls fn(T{}) with T the unsigned integer type of `elem_size` bytes.
template <class Fn>
void visit_elem_size(size_t elem_size, Fn&& fn) {
  switch (elem_size) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    case 8: return fn(uint64_t{});
    default: assert(false && "copy kernels: element size must be 1, 2, 4 or 8");
  }
}

// Offset (in elements) of entry `row` of a row-major odometer over `dims`, given each axis's stride.
int64_t offset_of(int64_t row, std::span<const int64_t> dims, std::span<const int64_t> strides) {
  int64_t offset = 0;
  for (size_t d = dims.size(); d-- > 0;) {
    offset += (row % dims[d]) * strides[d];
    row /= dims[d];
  }
  return offset;
}

// 4x4 block of 4-byte elements: shuffles move bits unchanged, so this is exact for any dtype.
inline void transpose_4x4_u32(const uint32_t* src, int64_t src_ld, uint32_t* dst, int64_t dst_ld) {
  __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(src));
  __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(src + src_ld));
  __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(src + 2 * src_ld));
  __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(src + 3 * src_ld));
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  _mm_storeu_ps(reinterpret_cast<float*>(dst), r0);
  _mm_storeu_ps(reinterpret_cast<float*>(dst + dst_ld), r1);
  _mm_storeu_ps(reinterpret_cast<float*>(dst + 2 * dst_ld), r2);
  _mm_storeu_ps(reinterpret_cast<float*>(dst + 3 * dst_ld), r3);
}

// 8x8 block of 2-byte elements (bfloat16) with SSE2 unpacks.
inline void transpose_8x8_u16(const uint16_t* src, int64_t src_ld, uint16_t* dst, int64_t dst_ld) {
  __m128i r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * src_ld));
  const __m128i a0 = _mm_unpacklo_epi16(r[0], r[1]), a1 = _mm_unpackhi_epi16(r[0], r[1]);
  const __m128i a2 = _mm_unpacklo_epi16(r[2], r[3]), a3 = _mm_unpackhi_epi16(r[2], r[3]);
  const __m128i a4 = _mm_unpacklo_epi16(r[4], r[5]), a5 = _mm_unpackhi_epi16(r[4], r[5]);
  const __m128i a6 = _mm_unpacklo_epi16(r[6], r[7]), a7 = _mm_unpackhi_epi16(r[6], r[7]);
  const __m128i b0 = _mm_unpacklo_epi32(a0, a2), b1 = _mm_unpackhi_epi32(a0, a2);
  const __m128i b2 = _mm_unpacklo_epi32(a1, a3), b3 = _mm_unpackhi_epi32(a1, a3);
  const __m128i b4 = _mm_unpacklo_epi32(a4, a6), b5 = _mm_unpackhi_epi32(a4, a6);
  const __m128i b6 = _mm_unpacklo_epi32(a5, a7), b7 = _mm_unpackhi_epi32(a5, a7);
  const __m128i out[8] = {_mm_unpacklo_epi64(b0, b4), _mm_unpackhi_epi64(b0, b4), _mm_unpacklo_epi64(b1, b5),
                          _mm_unpackhi_epi64(b1, b5), _mm_unpacklo_epi64(b2, b6), _mm_unpackhi_epi64(b2, b6),
                          _mm_unpacklo_epi64(b3, b7), _mm_unpackhi_epi64(b3, b7)};
  for (int i = 0; i < 8; ++i) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i * dst_ld), out[i]);
}

// One tile: dst[i][j] = src[j][i] for i < rows, j < cols, in SIMD blocks where the
// element size has one and scalar moves at the ragged edges.
template <class T>
void transpose_tile(const T* src, int64_t src_ld, T* dst, int64_t dst_ld, int64_t rows, int64_t cols) {
  constexpr int64_t kSimd = sizeof(T) == 4 ? 4 : sizeof(T) == 2 ? 8 : 1;
  int64_t i = 0;
  if constexpr (kSimd > 1) {
    for (; i + kSimd <= rows; i += kSimd) {
      int64_t j = 0;
      for (; j + kSimd <= cols; j += kSimd) {
        if constexpr (sizeof(T) == 4) {
          transpose_4x4_u32(src + j * src_ld + i, src_ld, dst + i * dst_ld + j, dst_ld);
        } else {
          transpose_8x8_u16(src + j * src_ld + i, src_ld, dst + i * dst_ld + j, dst_ld);
        }
      }
      for (int64_t ii = i; ii < i + kSimd; ++ii) {
        for (int64_t jj = j; jj < cols; ++jj) dst[ii * dst_ld + jj] = src[jj * src_ld + ii];
      }
    }
  }
  for (; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) dst[i * dst_ld + j] = src[j * src_ld + i];
  }
}

template <class T>
void transpose_2d_typed(const T* src, int64_t src_ld, T* dst, int64_t dst_ld, int64_t rows, int64_t cols) {
  for (int64_t bi = 0; bi < rows; bi += kBlock) {
    for (int64_t bj = 0; bj < cols; bj += kBlock) {
      const int64_t i_end = std::min(rows, bi + kBlock), j_end = std::min(cols, bj + kBlock);
      for (int64_t i = bi; i < i_end; i += kTile) {
        for (int64_t j = bj; j < j_end; j += kTile) {
          transpose_tile(src + j * src_ld + i, src_ld, dst + i * dst_ld + j, dst_ld, std::min(kTile, i_end - i),
                         std::min(kTile, j_end - j));
        }
      }
    }
  }
}

// Copies one run of `run_bytes` for every index of an odometer over `dims`: run r goes
// from src + src_strides . index(r) to dst + dst_strides . index(r) (strides in bytes).
// Threaded when there is enough to copy; each thread walks its rows incrementally.
void copy_runs(const char* src, char* dst, std::span<const int64_t> dims, std::span<const int64_t> src_strides,
               std::span<const int64_t> dst_strides, int64_t run_bytes) {
  int64_t rows = 1;
  for (int64_t d : dims) rows *= d;
  const int rank = static_cast<int>(dims.size());
  const int64_t grain = std::max<int64_t>(1, kParallelGrainBytes / std::max<int64_t>(run_bytes, 1));
  parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    std::array<int64_t, kMaxRank> index{};
    int64_t rest = begin, src_off = 0, dst_off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      index[d] = rest % dims[d];
      rest /= dims[d];
      src_off += index[d] * src_strides[d];
      dst_off += index[d] * dst_strides[d];
    }
    for (int64_t r = begin; r < end; ++r) {
      std::memcpy(dst + dst_off, src + src_off, static_cast<size_t>(run_bytes));
      for (int d = rank - 1; d >= 0; --d) {
        src_off += src_strides[d];
        dst_off += dst_strides[d];
        if (++index[d] < dims[d]) break;
        src_off -= dims[d] * src_strides[d];
        dst_off -= dims[d] * dst_strides[d];
        index[d] = 0;
      }
    }
  });
}

// The same strides scaled from elements to bytes.
std::array<int64_t, kMaxRank> in_bytes(std::span<const int64_t> strides, int64_t elem_size) {
  std::array<int64_t, kMaxRank> out{};
  for (size_t d = 0; d < strides.size(); ++d) out[d] = strides[d] * elem_size;
  return out;
}

}  // namespace

void transpose_2d(const void* src, int64_t src_ld, void* dst, int64_t dst_ld, int64_t rows, int64_t cols,
                  size_t elem_size) {
  visit_elem_size(elem_size, [&](auto v) {
    using T = decltype(v);
    transpose_2d_typed(static_cast<const T*>(src), src_ld, static_cast<T*>(dst), dst_ld, rows, cols);
  });
}

void copy_block(const void* src, const Shape& src_shape, std::span<const int64_t> src_start, void* dst,
                const Shape& dst_shape, std::span<const int64_t> dst_start, const Shape& block, size_t elem_size) {
  const int rank = block.rank();
  assert(src_shape.rank() == rank && dst_shape.rank() == rank);
  assert(static_cast<int>(src_start.size()) == rank && static_cast<int>(dst_start.size()) == rank);
  if (block.numel() == 0) return;
  const auto src_strides = contiguous_strides(src_shape), dst_strides = contiguous_strides(dst_shape);
  int64_t src_base = 0, dst_base = 0;
  for (int d = 0; d < rank; ++d) {
    assert(src_start[d] >= 0 && src_start[d] + block[d] <= src_shape[d]);
    assert(dst_start[d] >= 0 && dst_start[d] + block[d] <= dst_shape[d]);
    src_base += src_start[d] * src_strides[d];
    dst_base += dst_start[d] * dst_strides[d];
  }
  // Trailing axes the block spans fully in both arrays are contiguous together with the
  // last partial one: they form one run. The axes before it are iterated.
  int outer_rank = rank;
  int64_t run = 1;
  while (outer_rank > 0) {
    --outer_rank;
    run *= block[outer_rank];
    if (block[outer_rank] != src_shape[outer_rank] || block[outer_rank] != dst_shape[outer_rank]) break;
  }
  const int64_t es = static_cast<int64_t>(elem_size);
  const auto src_bytes = in_bytes(src_strides, es), dst_bytes = in_bytes(dst_strides, es);
  const auto n = static_cast<size_t>(outer_rank);
  copy_runs(static_cast<const char*>(src) + src_base * es, static_cast<char*>(dst) + dst_base * es,
            {block.begin(), n}, {src_bytes.data(), n}, {dst_bytes.data(), n}, run * es);
}

Tensor extract_block(const Tensor& x, std::span<const int64_t> start, const Shape& block) {
  Tensor out = Tensor::empty(block, x.dtype(), x.device());
  const std::vector<int64_t> origin(static_cast<size_t>(block.rank()), 0);
  copy_block(x.raw_data(), x.shape(), start, out.raw_data(), block, origin, block, dtype_size(x.dtype()));
  return out;
}

void insert_block(const Tensor& dst, std::span<const int64_t> start, const Tensor& part, const Shape& as_shape) {
  const std::vector<int64_t> origin(static_cast<size_t>(as_shape.rank()), 0);
  copy_block(part.raw_data(), as_shape, origin, dst.raw_data(), dst.shape(), start, as_shape, dtype_size(dst.dtype()));
}

void permute(const void* src, const Shape& src_shape, std::span<const int> perm, void* dst, size_t elem_size) {
  assert(static_cast<int>(perm.size()) == src_shape.rank());
  const int64_t numel = src_shape.numel();
  if (numel == 0) return;
  // dst's axes with the stride each has in src; size-1 axes dropped, and an axis merged
  // into the previous one when the two are adjacent in src as well.
  const auto src_strides = contiguous_strides(src_shape);
  std::array<int64_t, kMaxRank> dims{}, strides{};
  int m = 0;
  for (int axis : perm) {
    const int64_t size = src_shape[axis], stride = src_strides[axis];
    if (size == 1) continue;
    if (m > 0 && strides[m - 1] == stride * size) {
      dims[m - 1] *= size;
      strides[m - 1] = stride;
    } else {
      dims[m] = size;
      strides[m] = stride;
      ++m;
    }
  }
  const int64_t es = static_cast<int64_t>(elem_size);
  const char* in = static_cast<const char*>(src);
  char* out = static_cast<char*>(dst);
  if (m == 0 || strides[m - 1] == 1) {
    // The innermost axis is contiguous in src too: copy rows of it.
    const int64_t run = m == 0 ? 1 : dims[m - 1];
    const auto n = static_cast<size_t>(std::max(m - 1, 0));
    const auto src_bytes = in_bytes({strides.data(), n}, es);
    auto dst_bytes = contiguous_strides(Shape(std::span<const int64_t>(dims.data(), n)));
    for (auto& s : dst_bytes) s *= run * es;
    copy_runs(in, out, {dims.data(), n}, {src_bytes.data(), n}, {dst_bytes.data(), n}, run * es);
    return;
  }
  // A batch of 2-D transposes between axis k (contiguous in src) and the last axis
  // (contiguous in dst); every other axis indexes the batch.
  const int k = static_cast<int>(std::find(strides.begin(), strides.begin() + m, int64_t{1}) - strides.begin());
  assert(k < m - 1);
  const auto dst_strides = contiguous_strides(Shape(std::span<const int64_t>(dims.data(), static_cast<size_t>(m))));
  std::array<int64_t, kMaxRank> batch_dims{}, batch_src{}, batch_dst{};
  int nb = 0;
  for (int d = 0; d < m - 1; ++d) {
    if (d == k) continue;
    batch_dims[nb] = dims[d];
    batch_src[nb] = strides[d];
    batch_dst[nb] = dst_strides[d];
    ++nb;
  }
  const std::span<const int64_t> bdims(batch_dims.data(), static_cast<size_t>(nb));
  const int64_t rows = dims[k], cols = dims[m - 1], src_ld = strides[m - 1], dst_ld = dst_strides[k];
  // One job per L2 block of one 2-D transpose of the batch.
  const int64_t row_blocks = (rows + kBlock - 1) / kBlock, col_blocks = (cols + kBlock - 1) / kBlock;
  const int64_t jobs = numel / (rows * cols) * row_blocks * col_blocks;
  const int64_t job_bytes = std::min(kBlock, rows) * std::min(kBlock, cols) * es;
  const int64_t grain = std::max<int64_t>(1, kParallelGrainBytes / job_bytes);
  parallel_for(jobs, grain, [&](int64_t begin, int64_t end) {
    for (int64_t job = begin; job < end; ++job) {
      const int64_t batch = job / (row_blocks * col_blocks), block = job % (row_blocks * col_blocks);
      const int64_t i0 = block / col_blocks * kBlock, j0 = block % col_blocks * kBlock;
      const int64_t src_off = offset_of(batch, bdims, {batch_src.data(), bdims.size()}) + i0 + j0 * src_ld;
      const int64_t dst_off = offset_of(batch, bdims, {batch_dst.data(), bdims.size()}) + i0 * dst_ld + j0;
      transpose_2d(in + src_off * es, src_ld, out + dst_off * es, dst_ld, std::min(kBlock, rows - i0),
                   std::min(kBlock, cols - j0), elem_size);
    }
  });
}

}  // namespace chorus::backend::cpu
