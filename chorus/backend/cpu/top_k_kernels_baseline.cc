// The top-k scans compiled for baseline x86-64 (SSE2): 16-byte vectors.
// CMake gives files named *_avx2.cc / *_avx512.cc that ISA's flags; active_isa()
// decides at run time which table may be used.
#include "chorus/backend/cpu/top_k_kernels_impl.h"

namespace chorus::backend::cpu {

const TopKKernelTable& top_k_table_baseline() {
  static constexpr TopKKernelTable kTable = make_top_k_table<16>();
  return kTable;
}

}  // namespace chorus::backend::cpu
