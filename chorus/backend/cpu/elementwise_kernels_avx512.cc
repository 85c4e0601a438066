// AVX-512 build of the elementwise loops (CMake compiles *_avx512.cc with -mavx512f/bw/dq/vl).
// Only reached through the dispatcher in elementwise_kernels.cc, after checking the CPU.
//
// No kernel runs with floating-point exceptions unmasked or reads the exception flags, so
// operations need not be treated as trapping; without this, GCC refuses to if-convert
// selects around divisions and conversions, and those loops would not vectorise.
#pragma GCC optimize("no-trapping-math")

#include "chorus/backend/cpu/elementwise_loops.h"

namespace chorus::backend::cpu {

const KernelTable& avx512_kernel_table() {
  static constexpr KernelTable kTable = make_kernel_table();
  return kTable;
}

}  // namespace chorus::backend::cpu
