// AVX2 + FMA build of the elementwise loops (CMake compiles *_avx2.cc with -mavx2 -mfma).
// Only reached through the dispatcher in elementwise_kernels.cc, after checking the CPU.

#include "chorus/backend/cpu/elementwise_loops.h"

namespace chorus::backend::cpu {

const KernelTable& avx2_kernel_table() {
  static constexpr KernelTable kTable = make_kernel_table();
  return kTable;
}

}  // namespace chorus::backend::cpu
