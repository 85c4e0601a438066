// Instruction sets the CPU kernels are compiled for, and which one runs. Every vectorised
// kernel family (elementwise, reductions, softmax) is built once per Isa in files named
// *_baseline.cc, *_avx2.cc and *_avx512.cc; active_isa() picks the best one this CPU runs,
// detected once, so one binary runs on any x86-64. Thread-safe; the test override is per thread.
#pragma once

#include <cstdint>
#include <string_view>

namespace chorus::backend::cpu {

enum class Isa : uint8_t { kBaseline, kAvx2, kAvx512 };

// "baseline", "avx2", "avx512".
std::string_view isa_name(Isa isa);
// The best ISA this CPU (and OS) runs, detected once.
Isa best_isa();
// Whether this CPU can run `isa`'s kernels.
bool isa_supported(Isa isa);
// The ISA kernels started from this thread use: best_isa(), unless a ScopedIsaOverride is
// active on this thread.
Isa active_isa();

// Forces this thread's kernels to `isa` for the guard's lifetime (tests compare each ISA
// against the baseline with it) and restores the previous choice on destruction. Throws
// ValueError if the CPU cannot run `isa`. Kernels chosen on this thread run on its
// OpenMP workers too.
class ScopedIsaOverride {
 public:
  explicit ScopedIsaOverride(Isa isa);
  ~ScopedIsaOverride();
  ScopedIsaOverride(const ScopedIsaOverride&) = delete;
  ScopedIsaOverride& operator=(const ScopedIsaOverride&) = delete;

 private:
  int previous_;
};

}  // namespace chorus::backend::cpu
