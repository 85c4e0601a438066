// The row gather/scatter kernels compiled for baseline x86-64 (SSE2): 16-byte vectors.
// CMake gives files named *_avx2.cc / *_avx512.cc that ISA's flags; active_isa()
// decides at run time which table may be used.
#include "chorus/backend/cpu/gather_kernels_impl.h"

namespace chorus::backend::cpu {

const GatherKernelTable& gather_table_baseline() {
  static constexpr GatherKernelTable kTable = make_gather_table<16>();
  return kTable;
}

}  // namespace chorus::backend::cpu
