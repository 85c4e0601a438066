// Dispatch of the Philox kernels: the ISA's table, and whole 4-element blocks to threads.
#include "chorus/backend/cpu/random_kernels.h"

#include <algorithm>
#include <bit>
#include <cassert>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/backend/cpu/random_kernels_isa.h"

namespace chorus::backend::cpu {
namespace {

constexpr int64_t kBlocksPerTask = 4096;

// Element j = first + i of the mask is word j % 4 of block j / 4. A task covers whole
// blocks; the first one starts `skip` words into its block.
template <class Bits, class Kernel>
void fill(Kernel kernel, uint64_t key, int64_t first, uint32_t threshold, Bits keep_bits, Bits* out, int64_t n) {
  assert(first >= 0 && n >= 0);
  const int skip = static_cast<int>(first % 4);
  const auto first_block = static_cast<uint64_t>(first / 4);
  parallel_for((skip + n + 3) / 4, kBlocksPerTask, [&](int64_t begin, int64_t end) {
    const int64_t from = begin == 0 ? 0 : begin * 4 - skip;  // first element of block `begin`
    const int64_t to = std::min(n, end * 4 - skip);
    kernel(key, first_block + static_cast<uint64_t>(begin), begin == 0 ? skip : 0, threshold, keep_bits, out + from,
           to - from);
  });
}

}  // namespace

const RandomKernelTable& random_kernel_table(Isa isa) {
  assert(static_cast<int>(isa) <= static_cast<int>(best_isa()));
  switch (isa) {
    case Isa::kAvx512: return random_table_avx512();
    case Isa::kAvx2: return random_table_avx2();
    case Isa::kBaseline: break;
  }
  return random_table_baseline();
}

void dropout_mask(uint64_t key, int64_t first, uint32_t threshold, float keep_scale, float* out, int64_t n, Isa isa) {
  fill(random_kernel_table(isa).dropout_mask32, key, first, threshold, std::bit_cast<uint32_t>(keep_scale),
       reinterpret_cast<uint32_t*>(out), n);
}

void dropout_mask(uint64_t key, int64_t first, uint32_t threshold, float keep_scale, bfloat16* out, int64_t n,
                  Isa isa) {
  // The scale rounded once here, as bfloat16(float) rounds; the kernels only copy bits.
  fill(random_kernel_table(isa).dropout_mask16, key, first, threshold, bfloat16(keep_scale).bits,
       reinterpret_cast<uint16_t*>(out), n);
}

}  // namespace chorus::backend::cpu
