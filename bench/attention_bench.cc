// Scaled dot-product attention: the fused ops::dot_product_attention against the same
// computation composed of separate ops (transpose, matmul, scale, where(mask), softmax,
// matmul, transpose), forward alone and forward + backward, on BERT's shapes, with a
// padding mask. The two are sampled alternately in the same run and compared as a
// ratio (fused / unfused time: below 1 is faster). One JSON line per (shape, pass).
//   build/attention_bench [--quick]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_util.h"
#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/core/creation.h"
#include "chorus/core/random.h"
#include "chorus/ops/ops.h"

namespace chorus {
namespace {

struct Case {
  const char* name;
  int64_t b, t, n, d;  // batch, sequence, heads, head size
};

Tensor unfused(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& keep) {
  const Tensor qh = ops::transpose(q, {0, 2, 1, 3}), kh = ops::transpose(k, {0, 2, 1, 3}),
               vh = ops::transpose(v, {0, 2, 1, 3});
  Tensor s = ops::matmul(qh, kh, {.transpose_b = true}) * (1 / std::sqrt(static_cast<double>(q.dim(3))));
  s = ops::where(keep, s, full({}, -1e9));
  return ops::transpose(ops::matmul(ops::softmax(s, -1), vh), {0, 2, 1, 3});
}

void run_case(const Case& c, bool backward, int repeats) {
  Generator gen(3);
  const Tensor q = uniform({c.b, c.t, c.n, c.d}, gen, -1, 1), k = uniform({c.b, c.t, c.n, c.d}, gen, -1, 1),
               v = uniform({c.b, c.t, c.n, c.d}, gen, -1, 1), g = uniform({c.b, c.t, c.n, c.d}, gen, -1, 1);
  // Padding: sequence b keeps its first t - 8 * (b % 4) keys.
  std::vector<float> keep_values(static_cast<size_t>(c.b * c.t));
  for (int64_t b = 0; b < c.b; ++b) {
    for (int64_t s = 0; s < c.t; ++s) keep_values[b * c.t + s] = s < c.t - 8 * (b % 4) ? 1.f : 0.f;
  }
  const Tensor mask = from_values(keep_values, Shape{c.b, 1, 1, c.t});
  const Tensor keep = ops::cast(ops::broadcast_to(mask, Shape{c.b, c.n, c.t, c.t}), kBool);
  auto step = [&](bool fused) {
    if (!backward) {
      (void)(fused ? ops::dot_product_attention(q, k, v, {.mask = mask}).output : unfused(q, k, v, keep));
      return;
    }
    autograd::GradientTape tape;
    for (const Tensor& t : {q, k, v}) tape.watch(t);
    const Tensor y = fused ? ops::dot_product_attention(q, k, v, {.mask = mask}).output : unfused(q, k, v, keep);
    (void)tape.gradient(y, {q, k, v}, g);
  };
  auto fused = [&] { step(true); };
  auto composed = [&] { step(false); };
  for (int i = 0; i < 2; ++i) {
    fused();
    composed();
  }
  const int iters = bench::calibrate_iters(composed, 0.05);
  std::vector<double> fs, us;
  for (int r = 0; r < repeats; ++r) {  // alternate so drift hits both equally
    if (r % 2 == 0) {
      fs.push_back(bench::sample_seconds(fused, iters));
      us.push_back(bench::sample_seconds(composed, iters));
    } else {
      us.push_back(bench::sample_seconds(composed, iters));
      fs.push_back(bench::sample_seconds(fused, iters));
    }
  }
  // Matmul flops: QK^T and PV forward; twice that again backward.
  const double flops = 4.0 * static_cast<double>(c.b * c.n * c.t * c.t * c.d) * (backward ? 3 : 1);
  const double f = bench::median(fs), u = bench::median(us);
  bench::emit({{"bench", "attention"},
               {"shape", c.name},
               {"batch", c.b},
               {"seq", c.t},
               {"heads", c.n},
               {"head_dim", c.d},
               {"pass", backward ? "forward_backward" : "forward"},
               {"threads", backend::cpu::intra_op_threads()},
               {"fused_ms", f * 1e3},
               {"unfused_ms", u * 1e3},
               {"fused_gflops", flops / f * 1e-9},
               {"ratio_to_unfused", f / u}});
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  using namespace chorus;
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const std::vector<Case> cases = quick ? std::vector<Case>{{"bert-tiny", 8, 128, 2, 64}}
                                        : std::vector<Case>{{"bert-tiny", 32, 128, 2, 64},
                                                            {"bert-small", 32, 128, 8, 64},
                                                            {"bert-base", 8, 128, 12, 64},
                                                            {"bert-base-512", 2, 512, 12, 64}};
  for (const Case& c : cases) {
    for (bool backward : {false, true}) run_case(c, backward, quick ? 3 : 9);
  }
  return 0;
}
