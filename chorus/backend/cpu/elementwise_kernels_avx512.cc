// AVX-512 build of the elementwise loops (CMake compiles *_avx512.cc with -mavx512f/bw/dq/vl).
// Only reached through the dispatcher in elementwise_kernels.cc, after checking the CPU.

#include "chorus/backend/cpu/elementwise_loops.h"

namespace chorus::backend::cpu {

const KernelTable& avx512_kernel_table() {
  static constexpr KernelTable kTable = make_kernel_table();
  return kTable;
}

}  // namespace chorus::backend::cpu
