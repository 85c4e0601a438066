// matmul throughput: ops::matmul (cache lookup and output allocation included) against
// oneDNN called directly with a primitive created once and a preallocated output, on
// the MLP's training shapes (forward, and the two backward products), f32 and bf16, on
// the default thread count and on 1 thread (`matmul_bench --bert`: BERT-tiny's shapes). The two are sampled alternately in the same
// run and compared as a ratio (target >= 0.95). One JSON line per (shape, dtype, threads).
#include <algorithm>
#include <chrono>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>
#include <fmt/format.h>
#include <omp.h>

#include "bench/bench_util.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/core/random.h"
#include "chorus/ops/matmul.h"

namespace chorus {
namespace {

// c (M, N) = op(a) @ op(b), with a stored (K, M) when ta and b stored (N, K) when tb.
struct Case {
  std::string form;  // "forward", "dx" (g @ W^T) or "dW" (x^T @ g)
  int64_t m, k, n;
  bool ta, tb;
};

// The MNIST MLP's products, or (--bert) BERT-tiny's in the peer's configuration: the
// 128-wide projections and the 512-wide feedforward over 64 x 128 tokens, and the tied
// output layer over 64 x 20 masked rows and a 33,282-word vocabulary.
std::vector<Case> cases(bool bert) {
  std::vector<Case> out;
  if (bert) {
    out.push_back({"forward", 8192, 128, 128, false, false});
    out.push_back({"forward", 8192, 128, 512, false, false});
    out.push_back({"forward", 8192, 512, 128, false, false});
    out.push_back({"logits", 1280, 128, 33282, false, true});  // h @ E^T, E stored (V, H)
    out.push_back({"dh", 1280, 33282, 128, false, false});     // g @ E
    out.push_back({"dE", 33282, 1280, 128, true, false});      // g^T @ h
    return out;
  }
  const int64_t forward[][3] = {{1000, 784, 256}, {64, 784, 256}, {256, 256, 1000}};
  for (const auto& f : forward) {
    const int64_t m = f[0], k = f[1], n = f[2];  // y = x @ W: x (M, K), W (K, N)
    out.push_back({"forward", m, k, n, false, false});
    out.push_back({"dx", m, n, k, false, true});  // g (M, N) @ W^T, W stored (K, N)
    out.push_back({"dW", k, m, n, true, false});  // x^T @ g, x stored (M, K)
  }
  return out;
}

std::string shape_name(const Case& c) {
  return fmt::format("{}x{}{}@{}x{}{}", c.m, c.k, c.ta ? "^T" : "", c.k, c.n, c.tb ? "^T" : "");
}

// The same product through oneDNN's C++ API with nothing around it.
class DirectMatmul {
 public:
  DirectMatmul(const Case& c, DType dtype, const Tensor& a, const Tensor& b, const Tensor& out) {
    using dims = dnnl::memory::dims;
    const auto type = dtype == kBFloat16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
    const dnnl::memory::desc a_md(dims{c.m, c.k}, type, c.ta ? dims{1, c.m} : dims{c.k, 1});
    const dnnl::memory::desc b_md(dims{c.k, c.n}, type, c.tb ? dims{1, c.k} : dims{c.n, 1});
    const dnnl::memory::desc c_md(dims{c.m, c.n}, type, dims{c.n, 1});
    primitive_ = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), engine_));
    args_ = {{DNNL_ARG_SRC, dnnl::memory(a_md, engine_, a.raw_data())},
             {DNNL_ARG_WEIGHTS, dnnl::memory(b_md, engine_, b.raw_data())},
             {DNNL_ARG_DST, dnnl::memory(c_md, engine_, out.raw_data())}};
  }
  void operator()() {
    primitive_.execute(stream_, args_);
    stream_.wait();
  }

 private:
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  dnnl::matmul primitive_;
  std::unordered_map<int, dnnl::memory> args_;
};

void run_case(const Case& c, DType dtype, int threads) {
  Generator gen(7);
  const Tensor a = uniform(c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k}, gen, -1, 1, dtype);
  const Tensor b = uniform(c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n}, gen, -1, 1, dtype);
  const Tensor direct_out = Tensor::empty({c.m, c.n}, dtype);
  DirectMatmul direct(c, dtype, a, b, direct_out);
  const ops::MatmulOptions options{.transpose_a = c.ta, .transpose_b = c.tb};
  auto via_ops = [&] { (void)ops::matmul(a, b, options); };

  for (int i = 0; i < 3; ++i) {  // warm up both (JIT, caches, allocator)
    via_ops();
    direct();
  }
  const int iters = bench::calibrate_iters(direct, 0.03);
  std::vector<double> ops_s, direct_s;
  for (int r = 0; r < 15; ++r) {  // alternate so drift hits both equally
    if (r % 2 == 0) {
      ops_s.push_back(bench::sample_seconds(via_ops, iters));
      direct_s.push_back(bench::sample_seconds(direct, iters));
    } else {
      direct_s.push_back(bench::sample_seconds(direct, iters));
      ops_s.push_back(bench::sample_seconds(via_ops, iters));
    }
  }
  const double flops = 2.0 * static_cast<double>(c.m * c.k * c.n);
  const double gflops = flops / bench::median(ops_s) * 1e-9, direct_gflops = flops / bench::median(direct_s) * 1e-9;
  bench::emit({{"bench", "matmul"},
               {"shape", shape_name(c)},
               {"form", c.form},
               {"dtype", std::string(dtype_name(dtype))},
               {"threads", threads},
               {"gflops", gflops},
               {"direct_gflops", direct_gflops},
               {"ratio_to_direct", gflops / direct_gflops}});
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  using namespace chorus;
  const bool bert = argc > 1 && std::string(argv[1]) == "--bert";
  const int default_threads = backend::cpu::intra_op_threads();
  for (int threads : {default_threads, 1}) {
    backend::cpu::set_intra_op_threads(threads);
    omp_set_num_threads(threads);
    for (DType dtype : {kFloat32, kBFloat16}) {
      for (const Case& c : cases(bert)) run_case(c, dtype, threads);
    }
  }
  return 0;
}
