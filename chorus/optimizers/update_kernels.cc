// Dispatch for the optimizer update loops: picks the calling thread's ISA once per call,
// then splits the elements across the intra-op threads in chunks of at least kGrain.

#include "chorus/optimizers/update_kernels.h"

#include <vector>

#include "chorus/backend/cpu/isa.h"
#include "chorus/backend/cpu/parallel.h"

namespace chorus::optimizers::kernels {
namespace {

using backend::cpu::Isa;
using backend::cpu::parallel_for;

// Resolved on the calling thread: OpenMP workers inherit its choice through the pointer.
const UpdateTable& table() {
  switch (backend::cpu::active_isa()) {
    case Isa::kAvx512:
      return avx512_update_table();
    case Isa::kAvx2:
      return avx2_update_table();
    case Isa::kBaseline:
      break;
  }
  return baseline_update_table();
}

template <class Args, class Loop>
void run(const Args& args, int64_t n, Loop loop) {
  parallel_for(n, kGrain, [&](int64_t begin, int64_t end) { loop(args, begin, end); });
}

// Groups [begin, end) of a sparse gradient split across the threads, each summing its
// groups' rows into its share of one scratch buffer.
template <class Args, class Loop>
void run_groups(const Args& args, const RowGroups& groups, int64_t begin, int64_t end, Loop loop) {
  // Kept between calls: a step's sums take the same memory every time.
  thread_local std::vector<float> sums;
  sums.resize(static_cast<size_t>((end - begin) * groups.width));
  float* scratch = sums.data();
  const int64_t grain = (kGrain + groups.width - 1) / (groups.width > 0 ? groups.width : 1);
  parallel_for(end - begin, grain, [&](int64_t b, int64_t e) {
    loop(args, groups, begin + b, begin + e, scratch + b * groups.width);
  });
}

}  // namespace

void sgd(const SgdArgs& args, int64_t n) { run(args, n, table().sgd); }
void adam(const AdamArgs& args, int64_t n) { run(args, n, table().adam); }
void adagrad(const AdagradArgs& args, int64_t n) { run(args, n, table().adagrad); }
void rmsprop(const RmspropArgs& args, int64_t n) { run(args, n, table().rmsprop); }

void adagrad_groups(const AdagradArgs& args, const RowGroups& groups, int64_t begin, int64_t end) {
  run_groups(args, groups, begin, end, table().adagrad_groups);
}

void sgd_groups(const SgdArgs& args, const RowGroups& groups, int64_t begin, int64_t end) {
  run_groups(args, groups, begin, end, table().sgd_groups);
}

void weight_decay(float* var, int64_t n, float wd, float lr) {
  const auto loop = table().weight_decay;
  parallel_for(n, kGrain, [&](int64_t begin, int64_t end) { loop(var, begin, end, wd, lr); });
}

void scale(const float* x, float* out, int64_t n, float factor) {
  const auto loop = table().scale;
  parallel_for(n, kGrain, [&](int64_t begin, int64_t end) { loop(x, out, begin, end, factor); });
}

void clip(const float* x, float* out, int64_t n, float limit) {
  const auto loop = table().clip;
  parallel_for(n, kGrain, [&](int64_t begin, int64_t end) { loop(x, out, begin, end, limit); });
}

double sum_of_squares(const float* x, int64_t n) {
  const auto loop = table().sum_of_squares;
  const int64_t blocks = (n + kGrain - 1) / kGrain;
  std::vector<double> partial(static_cast<size_t>(blocks));
  // One block per index, so the partial sums (and their in-order total) are the same for
  // any thread count.
  parallel_for(blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      const int64_t end = b * kGrain + kGrain < n ? b * kGrain + kGrain : n;
      partial[static_cast<size_t>(b)] = loop(x, b * kGrain, end);
    }
  });
  double total = 0;
  for (const double p : partial) total += p;
  return total;
}

}  // namespace chorus::optimizers::kernels
