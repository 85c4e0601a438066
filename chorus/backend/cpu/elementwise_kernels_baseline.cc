// Baseline x86-64 (SSE2) build of the elementwise loops: the fallback on any CPU.
// Only reached through the dispatcher in elementwise_kernels.cc, after checking the CPU.

#include "chorus/backend/cpu/elementwise_loops.h"

namespace chorus::backend::cpu {

const KernelTable& baseline_kernel_table() {
  static constexpr KernelTable kTable = make_kernel_table();
  return kTable;
}

}  // namespace chorus::backend::cpu
