// Baseline (SSE2) build of the optimizer update loops.
// Only reached through the dispatcher in update_kernels.cc, after checking the CPU.

#include "chorus/optimizers/update_kernels_loops.h"

namespace chorus::optimizers::kernels {

const UpdateTable& baseline_update_table() {
  static constexpr UpdateTable kTable = make_update_table();
  return kTable;
}

}  // namespace chorus::optimizers::kernels
