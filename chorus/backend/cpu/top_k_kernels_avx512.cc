// The top-k scans compiled for AVX-512: 64-byte vectors.
// CMake gives files named *_avx2.cc / *_avx512.cc that ISA's flags; active_isa()
// decides at run time which table may be used.
#include "chorus/backend/cpu/top_k_kernels_impl.h"

namespace chorus::backend::cpu {

const TopKKernelTable& top_k_table_avx512() {
  static constexpr TopKKernelTable kTable = make_top_k_table<64>();
  return kTable;
}

}  // namespace chorus::backend::cpu
