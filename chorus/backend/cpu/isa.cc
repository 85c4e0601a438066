#include "chorus/backend/cpu/isa.h"

#include "chorus/core/error.h"

namespace chorus::backend::cpu {
namespace {

// Per thread so that a test can run one thread's kernels on another ISA (IsaOverride).
thread_local int t_isa_override = -1;  // -1: none; else an Isa value

Isa detect_best_isa() {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return avx512 ? Isa::kAvx512 : avx2 ? Isa::kAvx2 : Isa::kBaseline;
}

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kBaseline: return "baseline";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "unknown";
}

Isa best_isa() {
  static const Isa best = detect_best_isa();
  return best;
}

bool isa_supported(Isa isa) { return static_cast<int>(isa) <= static_cast<int>(best_isa()); }

Isa active_isa() { return t_isa_override >= 0 ? static_cast<Isa>(t_isa_override) : best_isa(); }

ScopedIsaOverride::ScopedIsaOverride(Isa isa) : previous_(t_isa_override) {
  if (!isa_supported(isa)) {
    throw_error<ValueError>("ScopedIsaOverride: this CPU cannot run {} kernels (best: {})", isa_name(isa),
                            isa_name(best_isa()));
  }
  t_isa_override = static_cast<int>(isa);
}

ScopedIsaOverride::~ScopedIsaOverride() { t_isa_override = previous_; }

}  // namespace chorus::backend::cpu
