// MNIST MLP training (the Keras tutorial's model and pipeline, tools/chorus/recipes/mnist_tutorial.h)
// against two references measured in the same run:
//   b64          model->fit steps/s at batch 64, on 2 (default) and 1 intra-op threads,
//                eager and with jit_compile (the compiled train step), interleaved,
//                against PyTorch's steps/s per configuration, measured by
//                bench/run_mnist_mlp just before and passed here; target >= 3x the best.
//                ratio_to_torch_best_threads: against the best of the plain thread
//                settings (t1, t2: the reference); ratio_to_torch_best: against
//                the best of all, flush-to-zero ones (*_ftz) included.
//                ratio_to_step_floor: against the step floor on the same threads (its
//                matmuls plus one pass of Adam over the weights, each timed alone between
//                the fit samples); target >= 0.85.
//   b1024        fit step time at batch 1024 against the matmul-bound limit: the summed
//                time of direct oneDNN primitives for exactly the step's matmuls (forward
//                of 3 layers, dW of 3, dX of layers 2 and 3), sampled alternately with
//                fit in the same run; target limit/achieved >= 0.7. Also at batch 64
//                (no target: it shows how much of a step the matmuls must take).
//   breakdown    where a step's time goes (data, forward+loss, backward, optimizer,
//                metrics), from a hand-written copy of Model::train_step, per batch size.
//   rss          (--rss only) peak and current RSS after each stage of the tutorial
//                (load, get_dataset, one epoch, evaluate); the wrapper also measures
//                the whole mnist_mlp example with /usr/bin/time.
// Usage: mnist_mlp_bench [--data DIR] [--steps N] [--repeats R] [--rss] [--torch-blas WHAT]
//                        [NAME=S1,S2,...]...
// where NAME=S1,... are PyTorch steps/s samples of one configuration ("t1=226,230,224").
// Single-threaded driver; one JSON line per measurement (bench_util.h emit).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>
#include <fmt/format.h>

#include "bench/bench_util.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/chorus.h"
#include "tools/chorus/recipes/mnist_tutorial.h"

namespace chorus {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The 1-minute load average: other processes on this 2-core machine distort 2-thread
// timings most (a parallel region waits for its slowest thread).
double load_average() {
  std::ifstream in("/proc/loadavg");
  double load = -1;
  in >> load;
  return load;
}

struct Args {
  std::string data_dir;
  int64_t steps = 600;  // batch-64 steps per timed fit (an epoch has 781 full batches)
  int repeats = 5;
  bool rss = false;
  std::string torch_blas;  // which BLAS PyTorch loaded (the wrapper finds out)
  std::map<std::string, std::vector<double>> torch;  // config -> steps/s samples
};

// MNIST from --data, $CHORUS_SHARED_DATA/mnist or <repo>/../shared/data/mnist (as
// tests/testing/shared_data.h finds it); Debian's Fashion-MNIST when none exists.
std::string default_data_dir() {
  std::vector<std::filesystem::path> candidates;
  if (const char* env = std::getenv("CHORUS_SHARED_DATA"); env != nullptr && *env != '\0') {
    candidates.push_back(std::filesystem::path(env) / "mnist");
  }
  candidates.push_back(std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "shared/data/mnist");
  for (const auto& dir : candidates) {
    if (std::filesystem::exists(dir / "train-images-idx3-ubyte.gz")) return dir.string();
  }
  return datasets::fashion_mnist::kDebianDir;
}

Args parse_args(int argc, char** argv) {
  Args args;
  args.data_dir = default_data_dir();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--data" && i + 1 < argc) {
      args.data_dir = argv[++i];
    } else if (a == "--steps" && i + 1 < argc) {
      args.steps = std::atoll(argv[++i]);
    } else if (a == "--repeats" && i + 1 < argc) {
      args.repeats = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--torch-blas" && i + 1 < argc) {
      args.torch_blas = argv[++i];
    } else if (a == "--rss") {
      args.rss = true;
    } else if (const auto eq = a.find('='); eq != std::string::npos) {
      std::vector<double>& samples = args.torch[a.substr(0, eq)];
      for (size_t pos = eq + 1; pos < a.size();) {
        const size_t comma = std::min(a.find(',', pos), a.size());
        samples.push_back(std::atof(a.substr(pos, comma - pos).c_str()));
        pos = comma + 1;
      }
    } else {
      throw_error<ValueError>("mnist_mlp_bench: unknown argument '{}'", a);
    }
  }
  return args;
}

// --- batch 64: fit steps/s against PyTorch -------------------------------------------

struct FitRunner {
  std::unique_ptr<models::Model> model = recipes::get_compiled_model();
  data::Dataset train;
  int64_t steps;
  int threads;
  bool jit = false;  // compile({.jit_compile = true}): the compiled train step

  void compile() {
    models::CompileOptions options = model->compile_options();
    options.jit_compile = jit;
    model->compile(options);
  }

  // Seconds for one fit of `steps` steps (the first `steps` batches of the epoch).
  double run() {
    backend::cpu::set_intra_op_threads(threads);
    const auto start = Clock::now();
    model->fit(train, {.epochs = 1, .verbose = 0, .steps_per_epoch = steps});
    return seconds_since(start);
  }
};

// --- batch 1024: fit against the matmul-bound limit -----------------------------------

// One product through oneDNN's C++ API with nothing around it (as bench/matmul_bench.cc):
// c (M, N) = op(a) @ op(b), a stored (K, M) when ta, b stored (N, K) when tb.
struct MatmulShape {
  std::string what;
  int64_t m, k, n;
  bool ta, tb;
  double flops() const { return 2.0 * static_cast<double>(m * k * n); }
};

class DirectMatmul {
 public:
  explicit DirectMatmul(const MatmulShape& s) : shape_(s) {
    using dims = dnnl::memory::dims;
    const auto f32 = dnnl::memory::data_type::f32;
    Generator gen(11);
    a_ = uniform(s.ta ? Shape{s.k, s.m} : Shape{s.m, s.k}, gen, -1, 1);
    b_ = uniform(s.tb ? Shape{s.n, s.k} : Shape{s.k, s.n}, gen, -1, 1);
    c_ = Tensor::empty({s.m, s.n}, kFloat32);
    const dnnl::memory::desc a_md(dims{s.m, s.k}, f32, s.ta ? dims{1, s.m} : dims{s.k, 1});
    const dnnl::memory::desc b_md(dims{s.k, s.n}, f32, s.tb ? dims{1, s.k} : dims{s.n, 1});
    const dnnl::memory::desc c_md(dims{s.m, s.n}, f32, dims{s.n, 1});
    primitive_ = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), engine_));
    args_ = {{DNNL_ARG_SRC, dnnl::memory(a_md, engine_, a_.raw_data())},
             {DNNL_ARG_WEIGHTS, dnnl::memory(b_md, engine_, b_.raw_data())},
             {DNNL_ARG_DST, dnnl::memory(c_md, engine_, c_.raw_data())}};
  }
  void operator()() {
    primitive_.execute(stream_, args_);
    stream_.wait();
  }
  const MatmulShape& shape() const { return shape_; }

 private:
  MatmulShape shape_;
  Tensor a_, b_, c_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  dnnl::matmul primitive_;
  std::unordered_map<int, dnnl::memory> args_;
};

// The matmuls of one training step of the 784-256-256-10 MLP at batch b, as Dense and
// ops::matmul's backward lay them out: x (B, D) @ kernel (D, U); dW = x^T @ g;
// dX = g @ kernel^T. The input needs no gradient, so layer 1 has no dX.
std::vector<MatmulShape> step_matmuls(int64_t b) {
  const int64_t dims[][2] = {{784, 256}, {256, 256}, {256, 10}};
  std::vector<MatmulShape> out;
  for (int l = 0; l < 3; ++l) {
    const int64_t d = dims[l][0], u = dims[l][1];
    out.push_back({fmt::format("forward{}", l + 1), b, d, u, false, false});
    out.push_back({fmt::format("dW{}", l + 1), d, b, u, true, false});
    if (l > 0) out.push_back({fmt::format("dX{}", l + 1), b, u, d, false, true});
  }
  return out;
}

// Seconds per call of fn, over `iters` back-to-back calls.
template <class Fn>
double time_calls(Fn&& fn, int iters) {
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) fn();
  return seconds_since(start) / iters;
}

// What a step at `batch` cannot go below: its matmuls (direct oneDNN primitives) plus one
// read-and-write pass over Adam's state (the weights, m and v read and written, the
// gradient read: ~4 MB at this model's size), each timed alone.
class StepFloor {
 public:
  explicit StepFloor(int64_t batch) {
    const std::vector<MatmulShape> shapes = step_matmuls(batch);
    matmuls_.reserve(shapes.size());
    for (const MatmulShape& s : shapes) matmuls_.emplace_back(s);
    const int64_t parameters = 784 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10;
    Generator gen(12);
    for (Tensor* t : {&weights_, &m_, &v_, &gradient_}) *t = uniform(Shape{parameters}, gen, 0, 1);
  }
  // One sample on `threads`: the matmuls' summed time and the pass's, in seconds.
  double sample(int threads) {
    backend::cpu::set_intra_op_threads(threads);
    constexpr int kIters = 200;
    double sum = time_calls([this] { adam_pass(); }, kIters);
    for (DirectMatmul& d : matmuls_) sum += time_calls(d, kIters);
    return sum;
  }

 private:
  void adam_pass() {
    float *w = weights_.data<float>(), *m = m_.data<float>(), *v = v_.data<float>();
    const float* g = gradient_.data<float>();
    backend::cpu::parallel_for(weights_.numel(), 1 << 14, [&](int64_t begin, int64_t end) {
      // Adam's traffic without its square root and division, which a scalar loop could not
      // vectorise: the floor is the memory pass.
      for (int64_t i = begin; i < end; ++i) {
        m[i] = 0.9f * m[i] + 0.1f * g[i];
        v[i] = 0.999f * v[i] + 0.001f * g[i] * g[i];
        w[i] -= 1e-3f * m[i] * v[i];
      }
    });
  }

  std::vector<DirectMatmul> matmuls_;
  Tensor weights_, m_, v_, gradient_;
};

void report_b64(const Args& args, const FitRunner& runner, const std::vector<double>& seconds,
                const std::vector<double>& floor_seconds) {
  std::vector<double> rates;
  for (double s : seconds) rates.push_back(static_cast<double>(runner.steps) / s);
  const double steps_per_s = bench::median(rates);
  nlohmann::json record = {{"bench", "mnist_mlp"}, {"case", "fit_b64"},  {"threads", runner.threads}, {"jit", runner.jit},
                           {"batch", 64},          {"steps", runner.steps}, {"steps_per_s", steps_per_s},
                           {"samples", rates},     {"data", args.data_dir}, {"target_ratio", 3.0},
                           {"load_average", load_average()}};
  // The second reference: the step floor on the same threads, sampled between the fits.
  const double floor_s = bench::median(floor_seconds);
  record["step_floor_ms"] = floor_s * 1e3;
  record["ratio_to_step_floor"] = floor_s * steps_per_s;
  record["target_ratio_to_step_floor"] = 0.85;
  if (!args.torch.empty()) {
    nlohmann::json torch = nlohmann::json::object();
    std::string best_config;
    double best = 0, best_no_ftz = 0;
    for (const auto& [config, samples] : args.torch) {
      const double m = bench::median(samples);
      torch[config] = {{"steps_per_s", m}, {"samples", samples}};
      if (m > best) best = m, best_config = config;
      if (config.find("ftz") == std::string::npos) best_no_ftz = std::max(best_no_ftz, m);
    }
    record["torch"] = torch;
    record["torch_blas"] = args.torch_blas;
    record["torch_best_config"] = best_config;
    record["ratio_to_torch_best"] = steps_per_s / best;
    // The brief's reference (thread settings only, PyTorch's default denormal handling).
    if (best_no_ftz > 0) record["ratio_to_torch_best_threads"] = steps_per_s / best_no_ftz;
  }
  bench::emit(record);
}

void bench_b64(const Args& args, const data::Dataset& train) {
  const int default_threads = backend::cpu::intra_op_threads();
  std::vector<FitRunner> runners;
  for (int threads : {default_threads, 1}) {
    for (bool jit : {false, true}) {
      runners.push_back({.train = train, .steps = 50, .threads = threads, .jit = jit});
      runners.back().compile();
      runners.back().run();  // warm-up: optimizer slots, matmul primitives, allocator caches, the trace
      runners.back().steps = args.steps;
    }
  }
  StepFloor floor(64);
  std::map<int, std::vector<double>> floor_seconds;  // by threads
  std::vector<std::vector<double>> seconds(runners.size());
  for (int r = 0; r < args.repeats; ++r) {  // interleaved, so drift hits every setting alike
    for (size_t i = 0; i < runners.size(); ++i) seconds[i].push_back(runners[i].run());
    for (int threads : {default_threads, 1}) floor_seconds[threads].push_back(floor.sample(threads));
  }
  for (size_t i = 0; i < runners.size(); ++i) {
    report_b64(args, runners[i], seconds[i], floor_seconds[runners[i].threads]);
  }
}

// `steps` full batches of `batch` examples per fit sample (the epoch's last batch is short).
void bench_matmul_bound(const Args& args, const data::Dataset& train, int64_t batch, int64_t steps, int threads) {
  backend::cpu::set_intra_op_threads(threads);
  FitRunner runner{.train = train, .steps = steps, .threads = threads};
  runner.run();  // warm-up: builds the optimizer slots and the matmul primitives
  const std::vector<MatmulShape> shapes = step_matmuls(batch);
  std::vector<DirectMatmul> direct;
  direct.reserve(shapes.size());
  for (const MatmulShape& s : shapes) direct.emplace_back(s);
  for (auto& d : direct) d(), d();
  const int iters = batch >= 512 ? 20 : 200;  // about 5-20 ms of matmuls per sample
  std::vector<double> fit_s, limit_s;
  std::vector<std::vector<double>> each_s(direct.size());
  for (int r = 0; r < std::max(args.repeats, 5); ++r) {  // alternate fit and limit samples
    fit_s.push_back(runner.run() / steps);
    backend::cpu::set_intra_op_threads(threads);
    double sum = 0;
    for (size_t i = 0; i < direct.size(); ++i) {
      each_s[i].push_back(time_calls(direct[i], iters));
      sum += each_s[i].back();
    }
    limit_s.push_back(sum);
  }
  double flops = 0;
  nlohmann::json matmuls = nlohmann::json::array();
  for (size_t i = 0; i < direct.size(); ++i) {
    const MatmulShape& s = direct[i].shape();
    flops += s.flops();
    matmuls.push_back({{"what", s.what}, {"shape", fmt::format("{}x{}{}@{}x{}{}", s.m, s.k, s.ta ? "^T" : "", s.k, s.n,
                                                                 s.tb ? "^T" : "")},
                       {"ms", bench::median(each_s[i]) * 1e3}, {"gflops", s.flops() / bench::median(each_s[i]) * 1e-9}});
  }
  const double step = bench::median(fit_s), limit = bench::median(limit_s);
  nlohmann::json record = {{"bench", "mnist_mlp"}, {"case", fmt::format("matmul_bound_b{}", batch)}, {"threads", threads},
               {"batch", batch}, {"steps", steps}, {"gflop_per_step", flops * 1e-9},
               {"step_ms", step * 1e3}, {"limit_step_ms", limit * 1e3},
               {"achieved_gflops", flops / step * 1e-9}, {"limit_gflops", flops / limit * 1e-9},
               {"ratio_limit_to_achieved", limit / step}, {"matmuls", matmuls},
               {"load_average", load_average()}};
  if (batch == 1024) record["target_ratio"] = 0.7;  // issue 4's target is for batch 1024
  bench::emit(record);
}

// --- breakdown: a copy of Model::train_step with timers ---------------------------------

void bench_breakdown(const data::Dataset& train, int64_t batch, int64_t steps, int threads) {
  backend::cpu::set_intra_op_threads(threads);
  auto model = recipes::get_compiled_model();
  model->fit(train, {.epochs = 1, .verbose = 0, .steps_per_epoch = 5});  // builds the slots
  std::vector<autograd::Variable> variables = model->trainable_weights();
  const std::vector<Tensor> sources(variables.begin(), variables.end());
  std::map<std::string, double> total;
  auto it = train.iterator();
  int64_t done = 0;
  for (; done < steps; ++done) {
    auto t = Clock::now();
    std::optional<Tree> batch_tree = it.next();
    if (!batch_tree) break;
    total["data"] += seconds_since(t);
    const Tree x = (*batch_tree)[0], y = (*batch_tree)[1];
    Tree y_pred;
    Tensor loss;
    std::vector<Tensor> grads;
    {
      autograd::GradientTape tape;
      t = Clock::now();
      y_pred = (*model)(x, /*training=*/true);
      total["forward"] += seconds_since(t);
      t = Clock::now();
      loss = model->compute_loss(x, y, y_pred);
      if (loss.rank() > 0) loss = ops::mean(loss);
      total["loss"] += seconds_since(t);
      t = Clock::now();
      grads = tape.gradient(loss, sources);
      total["backward"] += seconds_since(t);
      t = Clock::now();
    }
    total["tape_release"] += seconds_since(t);
    t = Clock::now();
    model->optimizer().apply_gradients(grads, variables);
    total["optimizer"] += seconds_since(t);
    t = Clock::now();
    model->update_metrics(loss, y, y_pred, Tensor());
    total["metrics"] += seconds_since(t);
  }
  double step = 0;
  nlohmann::json parts = nlohmann::json::object();
  for (const auto& [name, s] : total) step += s;
  for (const auto& [name, s] : total) {
    parts[name] = {{"ms_per_step", s / static_cast<double>(done) * 1e3}, {"fraction", s / step}};
  }
  // The one product the backward runs that the limit leaves out: layer 1's dX (the
  // gradient of the input), if ops::matmul's backward computes it.
  DirectMatmul dx1({"dX1", batch, 256, 784, false, true});
  dx1();
  parts["of_which_unneeded_dX1_if_computed"] = {{"ms_per_step", time_calls(dx1, 20) * 1e3}};
  bench::emit({{"bench", "mnist_mlp"}, {"case", "breakdown"}, {"batch", batch}, {"threads", threads},
               {"steps", done}, {"step_ms", step / static_cast<double>(done) * 1e3}, {"parts", parts}});
}

// --- rss: peak RSS by stage (for machines without /usr/bin/time, and to see where the
// example's memory goes) ------------------------------------------------------------------

// VmHWM (peak) and VmRSS (now) of this process, in MB.
std::pair<double, double> rss_mb() {
  std::ifstream status("/proc/self/status");
  double hwm = -1, rss = -1;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) hwm = std::atof(line.c_str() + 6) / 1024.0;  // kB
    if (line.rfind("VmRSS:", 0) == 0) rss = std::atof(line.c_str() + 6) / 1024.0;
  }
  return {hwm, rss};
}

void bench_rss(const Args& args) {
  nlohmann::json stages = nlohmann::json::array();
  auto stage = [&](const std::string& name) {
    const auto [hwm, rss] = rss_mb();
    stages.push_back({{"after", name}, {"peak_mb", hwm}, {"rss_mb", rss},
                      {"allocator_cache_mb", static_cast<double>(cached_host_bytes()) / (1 << 20)}});
  };
  stage("start");
  {
    const Tree train = datasets::mnist::load_data(args.data_dir, datasets::Split::kTrain);
    stage("mnist::load_data(train) alone");
  }
  recipes::MnistDatasets data = recipes::get_dataset(args.data_dir, 64);
  stage("get_dataset");
  auto model = recipes::get_compiled_model();
  model->fit(data.train, {.epochs = 1, .verbose = 0, .validation_data = data.val});
  stage("fit 1 epoch + validation");
  model->evaluate(data.test, {.verbose = 0});
  stage("evaluate");
  bench::emit({{"bench", "mnist_mlp"}, {"case", "peak_rss_in_bench"}, {"max_rss_mb", rss_mb().first},
               {"target_mb", 300}, {"stages", stages}});
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  namespace ch = chorus;
  try {
    const ch::Args args = ch::parse_args(argc, argv);
    if (args.rss) {
      ch::bench_rss(args);
      return 0;
    }
    const int default_threads = ch::backend::cpu::intra_op_threads();
    const ch::data::Dataset train64 = ch::recipes::get_dataset(args.data_dir, 64).train;
    ch::bench_b64(args, train64);
    const ch::data::Dataset train1024 = ch::recipes::get_dataset(args.data_dir, 1024).train;
    for (int threads : {default_threads, 1}) ch::bench_matmul_bound(args, train1024, 1024, 40, threads);
    // At batch 64 too: how far the matmuls alone are from the steps/s target.
    for (int threads : {default_threads, 1}) ch::bench_matmul_bound(args, train64, 64, 300, threads);
    for (int threads : {default_threads, 1}) {
      ch::bench_breakdown(train64, 64, 500, threads);
      ch::bench_breakdown(train1024, 1024, 40, threads);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mnist_mlp_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
