// AVX2 build of the optimizer update loops (CMake compiles *_avx2.cc with -mavx2 -mfma).
// Only reached through the dispatcher in update_kernels.cc, after checking the CPU.

#include "chorus/optimizers/update_kernels_loops.h"

namespace chorus::optimizers::kernels {

const UpdateTable& avx2_update_table() {
  static constexpr UpdateTable kTable = make_update_table();
  return kTable;
}

}  // namespace chorus::optimizers::kernels
