// The reduction and softmax leaf kernels compiled for AVX2 + FMA: 32-byte vectors.
// CMake gives files named *_avx2.cc / *_avx512.cc that ISA's flags; active_isa()
// decides at run time which table may be used.
#include "chorus/backend/cpu/reduce_kernels_impl.h"

namespace chorus::backend::cpu {

const ReduceKernelTable& reduce_table_avx2() {
  static constexpr ReduceKernelTable kTable = make_reduce_table<32>();
  return kTable;
}

}  // namespace chorus::backend::cpu
