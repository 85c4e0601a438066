// The Philox dropout-mask loops compiled for AVX2: 32-byte vectors. CMake gives files
// named *_avx2.cc / *_avx512.cc that ISA's flags; active_isa() decides at run time which
// table may be used.
#include "chorus/backend/cpu/random_kernels_impl.h"

namespace chorus::backend::cpu {

const RandomKernelTable& random_table_avx2() {
  static constexpr RandomKernelTable kTable = make_random_table<32>();
  return kTable;
}

}  // namespace chorus::backend::cpu
