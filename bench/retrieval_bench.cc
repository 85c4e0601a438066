// The keras-rs MovieLens retrieval tutorial (tools/chorus/recipes/retrieval_tutorial.h) against
// PyTorch's peer (../shared/peers/movielens_retrieval.py), measured by bench/run_retrieval
// just before in the same run and passed here as its JSON lines:
//   tutorial     the whole fit (50 epochs of 80 steps, validation every 5 epochs):
//                wall time, training steps/s and the final losses, median of repeats;
//                ratio to PyTorch's total_wall_s and steps_per_s (target >= 10x both).
//                Three times: validation computing only the loss (the default), eagerly
//                and compiled (jit_compile), and as Keras's test_step does it, with the
//                top-10 retrieval for every validation user.
//   breakdown    where a training step's time goes (data, forward + loss, backward,
//                optimizer, metrics), from a hand-written copy of Model::train_step.
//   ops          the pieces a step is made of, alone, forward and backward: the
//                embedding lookups (backward: dense zero-fill + scatter-add into a
//                table-sized gradient), the product, the row sum, the MSE loss; Adagrad
//                over both full tables densely, skipping the zero rows of a batch's
//                gradient (what it does now), and over only the rows a batch touches
//                (what a sparse gradient would update); one retrieval call.
//   floor        the step's kernels in sequence on the real batches, with no layers,
//                tape or optimizer bookkeeping: the unfused step's lower bound.
//   top_k        BruteForceRetrieval's top 10 for 1,000 queries of 32 dimensions against
//                1,683 candidates (the tutorial's) and 1M, in ms per 1,000 queries, against
//                the (1000, N) product alone on oneDNN: the selection's cost above the floor.
// Usage: retrieval_bench [--data DIR] [--threads N] [--devices N] [--repeats R] [--torch-json FILE]
//                        [--case tutorial|breakdown|ops|floor|top_k]
// Single-threaded driver; one JSON line per measurement (bench_util.h emit).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <utility>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/chorus.h"
#include "chorus/optimizers/update_kernels.h"
#include "tools/chorus/recipes/retrieval_tutorial.h"

namespace chorus {
namespace {

using Clock = std::chrono::steady_clock;
using autograd::Variable;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct Args {
  std::string data_dir;
  int threads = 1;
  int repeats = 3;
  std::vector<nlohmann::json> torch;  // the peer's final JSON line per run
  std::string only;                   // --case: run only this case (tutorial, breakdown, ops)
  int devices = 1;                    // --devices: tutorial fits under DataParallel over N devices
};

std::string default_data_dir() {
  if (const char* env = std::getenv("CHORUS_SHARED_DATA"); env != nullptr && *env != '\0') {
    return std::string(env) + "/ml-100k";
  }
  return (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "shared/data/ml-100k").string();
}

Args parse_args(int argc, char** argv) {
  Args args;
  args.data_dir = default_data_dir();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--data" && i + 1 < argc) {
      args.data_dir = argv[++i];
    } else if (a == "--threads" && i + 1 < argc) {
      args.threads = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--repeats" && i + 1 < argc) {
      args.repeats = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--devices" && i + 1 < argc) {
      args.devices = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--case" && i + 1 < argc) {
      args.only = argv[++i];
    } else if (a == "--torch-json" && i + 1 < argc) {
      std::ifstream in(argv[++i]);
      for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line[0] == '{') args.torch.push_back(nlohmann::json::parse(line));
      }
    } else {
      throw_error<ValueError>("retrieval_bench: unknown argument '{}'", a);
    }
  }
  return args;
}

// Sums the time fit spends in validation.
class ValidationTimer : public models::Callback {
 public:
  double seconds = 0;
  void on_test_begin(const models::Logs& /*logs*/) override { start_ = Clock::now(); }
  void on_test_end(const models::Logs& /*logs*/) override { seconds += seconds_since(start_); }

 private:
  Clock::time_point start_;
};

struct FitSample {
  double wall_s, train_s, val_s, loss, val_loss;
  int64_t steps;  // the optimizer's steps: what fit trained
};

// One whole fit of the tutorial from fresh weights.
FitSample run_fit(const recipes::RetrievalDatasets& data, bool retrieve_in_validation, int devices, bool jit) {
  std::optional<distribution::DistributionScope> data_parallel;
  if (devices > 1) {
    std::vector<Device> list;
    for (int i = 0; i < devices; ++i) list.push_back(Device::cpu(i));
    data_parallel.emplace(distribution::DataParallel(list).scope());
  }
  layers::set_random_seed(42);
  recipes::RetrievalModel model(data.users_count + 1, data.movies_count + 1, 32, retrieve_in_validation);
  model.compile({.optimizer = optimizers::Adagrad(0.2), .jit_compile = jit});
  auto timer = std::make_shared<ValidationTimer>();
  const auto start = Clock::now();
  models::History history = model.fit(
      data.train, {.epochs = 50, .verbose = 0, .callbacks = {timer}, .validation_data = data.test, .validation_freq = 5});
  const double wall = seconds_since(start);
  return {wall, wall - timer->seconds, timer->seconds, history.history.at("loss").back(),
          history.history.at("val_loss").back(), model.optimizer().iterations()};
}

void bench_tutorial(const Args& args, const recipes::RetrievalDatasets& data) {
  for (const auto& [keras_eval, jit] : {std::pair{false, false}, std::pair{false, true}, std::pair{true, false}}) {
    run_fit(data, keras_eval, args.devices, jit);  // warm-up: primitives, allocator caches
    std::vector<FitSample> samples;
    for (int r = 0; r < args.repeats; ++r) samples.push_back(run_fit(data, keras_eval, args.devices, jit));
    std::vector<double> wall, train, val, rates;
    for (const FitSample& s : samples) {
      wall.push_back(s.wall_s);
      train.push_back(s.train_s);
      val.push_back(s.val_s);
      rates.push_back(static_cast<double>(s.steps) / s.train_s);
      if (s.steps != samples.front().steps) {
        throw_error<ValueError>("retrieval_bench: fits of {} and {} steps", samples.front().steps, s.steps);
      }
    }
    nlohmann::json record = {{"bench", "retrieval"},
                             {"case", keras_eval ? "tutorial_keras_validation" : "tutorial"},
                             {"jit_compile", jit},
                             {"threads", args.threads},
                             {"devices", args.devices},
                             {"steps", samples.front().steps},
                             {"fit_wall_s", bench::median(wall)},
                             {"train_s", bench::median(train)},
                             {"validation_s", bench::median(val)},
                             {"steps_per_s", bench::median(rates)},
                             {"us_per_step", 1e6 / bench::median(rates)},
                             {"wall_samples", wall},
                             {"final_loss", samples.back().loss},
                             {"final_val_loss", samples.back().val_loss},
                             {"target_ratio", 10.0}};
    if (!args.torch.empty()) {
      std::vector<double> torch_wall, torch_rate;
      for (const auto& t : args.torch) {
        torch_wall.push_back(t.at("total_wall_s").get<double>());
        torch_rate.push_back(t.at("steps_per_s").get<double>());
      }
      record["torch"] = {{"total_wall_s", bench::median(torch_wall)},
                         {"steps_per_s", bench::median(torch_rate)},
                         {"wall_samples", torch_wall},
                         {"final_val_loss", args.torch.back().at("final").at("val_loss")}};
      record["ratio_wall"] = bench::median(torch_wall) / bench::median(wall);
      record["ratio_steps_per_s"] = bench::median(rates) / bench::median(torch_rate);
    }
    bench::emit(record);
  }
}

// --- breakdown: Model::train_step by hand, timing each part ---------------------------

void bench_breakdown(const Args& args, const recipes::RetrievalDatasets& data) {
  layers::set_random_seed(42);
  recipes::RetrievalModel model(data.users_count + 1, data.movies_count + 1);
  model.compile({.optimizer = optimizers::Adagrad(0.2)});
  model.fit(data.train, {.epochs = 1, .verbose = 0});  // builds and fills the cache
  std::map<std::string, std::vector<double>> parts;
  for (int epoch = 0; epoch < 50; ++epoch) {
    auto it = data.train.iterator(epoch);
    for (;;) {
      auto t0 = Clock::now();
      std::optional<Tree> batch = it.next();
      if (!batch) break;
      auto t1 = Clock::now();
      const Tree& x = (*batch)[0];
      const Tree& y = (*batch)[1];
      std::vector<Variable> variables;
      std::vector<Tensor> grads;
      std::vector<autograd::IndexedSlices> sparse_grads;  // the tables' gradients, as in train_step
      Tensor loss;
      std::chrono::steady_clock::time_point t2, t3;
      {
        autograd::GradientTape tape;
        Tree y_pred = model(x, /*training=*/true);
        loss = model.compute_loss(x, y, y_pred);
        t2 = Clock::now();
        variables = model.trainable_weights();
        std::vector<Tensor> sources(variables.begin(), variables.end());
        grads = tape.gradient(loss, sources, &sparse_grads);
        t3 = Clock::now();
      }
      model.optimizer().apply_gradients(grads, variables, sparse_grads);
      auto t4 = Clock::now();
      volatile float value = loss.item<float>();  // what update_metrics reads
      (void)value;
      auto t5 = Clock::now();
      auto us = [](auto a, auto b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
      parts["data"].push_back(us(t0, t1));
      parts["forward_and_loss"].push_back(us(t1, t2));
      parts["backward"].push_back(us(t2, t3));
      parts["optimizer"].push_back(us(t3, t4));
      parts["metrics"].push_back(us(t4, t5));
      parts["total"].push_back(us(t0, t5));
    }
  }
  nlohmann::json record = {{"bench", "retrieval"}, {"case", "breakdown"}, {"threads", args.threads}};
  for (const auto& [name, samples] : parts) record[name + "_us"] = bench::median(samples);
  record["target_total_us"] = 47;
  bench::emit(record);
}

// --- floor: the step's kernels in sequence, with no framework -----------------------

// The training step as its kernels alone, on the real batches: the forward ops and a
// hand-written backward run with the tape off, then Adagrad's dense update of each
// table (zero-fill, scatter-add of the batch's rows, the skip-zero kernel), with no
// layers, Model, tape or optimizer bookkeeping. What a faster framework could reach
// without fusing kernels; its gap to `breakdown` is the framework's share.
void bench_floor(const Args& args, const recipes::RetrievalDatasets& data) {
  const int64_t dim = 32;
  Generator gen(7);
  struct Table {
    Tensor value, accumulator;
  };
  Table tables[2];
  for (int64_t t = 0; t < 2; ++t) {
    const int64_t rows = t == 0 ? data.users_count + 1 : data.movies_count + 1;
    tables[t] = {uniform(Shape{rows, dim}, gen, -0.05, 0.05), full(Shape{rows, dim}, 0.1)};
  }
  autograd::NoGradGuard no_grad;
  auto step = [&](const Tree& batch) {
    const Tensor ids[2] = {batch[0].tensor(), batch[1]["movie_id"].tensor()};
    const Tensor u = ops::take(tables[0].value, ids[0], 0), m = ops::take(tables[1].value, ids[1], 0);
    const Tensor scores = ops::sum(ops::multiply(u, m), 1, true);
    const Tensor error = ops::subtract(scores, ops::expand_dims(batch[1]["rating"].tensor(), -1));
    volatile float loss = ops::mean(ops::square(error)).item<float>();  // what the metrics read
    (void)loss;
    const Tensor d_scores = ops::multiply(error, scalar(2.0f / static_cast<float>(u.dim(0))));
    const Tensor d_product = ops::broadcast_to(d_scores, u.shape());
    const Tensor grads[2] = {ops::multiply(d_product, m), ops::multiply(d_product, u)};
    for (int t = 0; t < 2; ++t) {
      const Tensor dense =
          autograd::IndexedSlices{.values = grads[t], .indices = ids[t], .dense_shape = tables[t].value.shape()}
              .to_dense();
      optimizers::kernels::adagrad({.var = tables[t].value.data<float>(),
                                    .accumulator = tables[t].accumulator.data<float>(),
                                    .grad = dense.data<float>(),
                                    .lr = 0.2f,
                                    .epsilon = 1e-7f,
                                    .skip_zero_pieces = true},
                                   dense.numel());
    }
  };
  std::vector<double> per_step;
  for (int r = 0; r < args.repeats + 1; ++r) {  // the first pass warms up
    const auto start = Clock::now();
    int64_t steps = 0;
    for (int epoch = 0; epoch < 50; ++epoch) {
      auto it = data.train.iterator(epoch);
      while (std::optional<Tree> batch = it.next()) {
        step(*batch);
        ++steps;
      }
    }
    if (r > 0) per_step.push_back(1e6 * seconds_since(start) / static_cast<double>(steps));
  }
  nlohmann::json record = {{"bench", "retrieval"},
                           {"case", "floor"},
                           {"threads", args.threads},
                           {"us_per_step", bench::median(per_step)},
                           {"samples_us", per_step}};
  if (!args.torch.empty()) {  // the most an unfused step could be faster than the peer
    std::vector<double> torch_rate;
    for (const auto& t : args.torch) torch_rate.push_back(t.at("steps_per_s").get<double>());
    record["torch_steps_per_s"] = bench::median(torch_rate);
    record["ratio_steps_per_s"] = 1e6 / bench::median(per_step) / bench::median(torch_rate);
  }
  bench::emit(record);
}

// --- ops: the pieces of a step alone -------------------------------------------------

void bench_ops(const Args& args, const recipes::RetrievalDatasets& data) {
  const int64_t users = data.users_count + 1, movies = data.movies_count + 1, dim = 32;
  Generator gen(7);
  Variable user_table("u/embeddings", uniform(Shape{users, dim}, gen, -0.05, 0.05));
  Variable movie_table("m/embeddings", uniform(Shape{movies, dim}, gen, -0.05, 0.05));
  auto it = data.train.iterator(0);
  const Tree batch = *it.next();
  const Tensor user_ids = batch[0].tensor(), movie_ids = batch[1]["movie_id"].tensor();
  const Tensor grad_rows = uniform(Shape{user_ids.dim(0), dim}, gen, -1, 1);
  nlohmann::json record = {{"bench", "retrieval"}, {"case", "ops"}, {"threads", args.threads}};
  auto time_us = [](auto&& fn) { return 1e6 * bench::median_seconds(fn, bench::calibrate_iters(fn, 0.02)); };

  // Each op of the step at its shapes; a backward is timed as (recorded forward +
  // gradient) minus the recorded forward alone.
  layers::Embedding embedding(users, dim);
  embedding(user_ids);
  record["embedding_call_us"] = time_us([&] { embedding(user_ids); });
  record["take_forward_us"] = time_us([&] { ops::take(user_table.value(), user_ids, 0); });
  const double take_recorded = time_us([&] {
    autograd::GradientTape tape;
    ops::take(user_table.value(), user_ids, 0);
  });
  record["take_backward_us"] = time_us([&] {  // zeros like the table + scatter-add of 1000 rows
    autograd::GradientTape tape;
    Tensor rows = ops::take(user_table.value(), user_ids, 0);
    tape.gradient(rows, {user_table.value()}, grad_rows);
  }) - take_recorded;
  const Tensor u = ops::take(user_table.value(), user_ids, 0), m = ops::take(movie_table.value(), movie_ids, 0);
  const Tensor product = ops::multiply(u, m), scores = ops::sum(product, 1, true);
  const Tensor labels = ops::expand_dims(batch[1]["rating"].tensor(), -1);
  const losses::MeanSquaredError mse;
  auto forward_and_backward = [&](const char* name, const std::vector<Tensor>& inputs, const Tensor& grad,
                                  const std::function<Tensor()>& op) {
    record[std::string(name) + "_forward_us"] = time_us([&] { op(); });
    const double recorded = time_us([&] {
      autograd::GradientTape tape;
      for (const Tensor& t : inputs) tape.watch(t);
      op();
    });
    record[std::string(name) + "_backward_us"] = time_us([&] {
      autograd::GradientTape tape;
      for (const Tensor& t : inputs) tape.watch(t);
      tape.gradient(op(), inputs, grad);
    }) - recorded;
  };
  forward_and_backward("multiply", {u, m}, grad_rows, [&] { return ops::multiply(u, m); });
  forward_and_backward("sum_axis1", {product}, uniform(Shape{u.dim(0), 1}, gen, -1, 1),
                       [&] { return ops::sum(product, 1, true); });
  forward_and_backward("mse_loss", {scores}, Tensor(), [&] { return mse(labels, scores); });
  // Adagrad over both whole tables (the dense update every step does now) against only
  // the distinct rows of the batch (a sparse update's work, here on contiguous rows).
  const int64_t dense = (users + movies) * dim;
  std::set<int32_t> distinct_users, distinct_movies;
  for (int32_t u : user_ids.to_vector<int32_t>()) distinct_users.insert(u);
  for (int32_t m : movie_ids.to_vector<int32_t>()) distinct_movies.insert(m);
  const auto touched = static_cast<int64_t>(distinct_users.size() + distinct_movies.size()) * dim;
  Tensor var = uniform(Shape{dense}, gen, -1, 1), acc = full(Shape{dense}, 0.1), g = uniform(Shape{dense}, gen, -1, 1);
  auto adagrad = [&](int64_t n) {
    optimizers::kernels::adagrad({.var = var.data<float>(), .accumulator = acc.data<float>(), .grad = g.data<float>(),
                                  .lr = 0.2f, .epsilon = 1e-7f},
                                 n);
  };
  record["adagrad_dense_us"] = time_us([&] { adagrad(dense); });
  // What Adagrad does now: the whole tables, skipping the rows whose gradient is all
  // zero (every row but the batch's distinct users and movies).
  Tensor sparse_g = zeros(Shape{dense});
  for (int32_t u : distinct_users) std::copy_n(g.data<float>() + u * dim, dim, sparse_g.data<float>() + u * dim);
  for (int32_t m : distinct_movies) {
    std::copy_n(g.data<float>() + (users + m) * dim, dim, sparse_g.data<float>() + (users + m) * dim);
  }
  record["adagrad_skip_zero_rows_us"] = time_us([&] {
    optimizers::kernels::adagrad({.var = var.data<float>(), .accumulator = acc.data<float>(),
                                  .grad = sparse_g.data<float>(), .lr = 0.2f, .epsilon = 1e-7f,
                                  .skip_zero_pieces = true},
                                 dense);
  });
  record["adagrad_touched_rows_us"] = time_us([&] { adagrad(touched); });
  // What Adagrad does with the tables' sparse gradients (train_step's): group each
  // batch's rows, then update those rows in place.
  const autograd::IndexedSlices user_slices{.values = grad_rows, .indices = user_ids, .dense_shape = user_table.shape()};
  const autograd::IndexedSlices movie_slices{.values = grad_rows, .indices = movie_ids, .dense_shape = movie_table.shape()};
  optimizers::Adagrad sparse_adagrad(0.2);
  const std::vector<Variable> tables{user_table, movie_table};
  const std::vector<Tensor> no_dense(2);
  const std::vector<autograd::IndexedSlices> slices{user_slices, movie_slices};
  record["adagrad_sparse_us"] = time_us([&] { sparse_adagrad.apply_gradients(no_dense, tables, slices); });
  record["dense_elements"] = dense;
  record["touched_elements"] = touched;
  record["zero_fill_dense_grads_us"] = time_us([&] { zeros(Shape{dense}); });

  // One retrieval call: 1000 users against all movies (what a Keras-style validation
  // batch adds).
  recsys::BruteForceRetrieval retrieval(10, false);
  retrieval.set_candidate_embeddings(movie_table);
  const Tensor queries = ops::take(user_table.value(), user_ids, 0);
  record["retrieval_1000_queries_us"] = time_us([&] { retrieval(queries); });
  record["retrieval_matmul_only_us"] =
      time_us([&] { ops::matmul(queries, movie_table.value(), {.transpose_b = true}); });
  record["candidates"] = movies;
  bench::emit(record);
}

void bench_top_k(const Args& args) {
  for (const int64_t candidates : {int64_t{1683}, int64_t{1000000}}) {
    Generator gen(11);
    const Tensor table = normal(Shape{candidates, 32}, gen), queries = normal(Shape{1000, 32}, gen);
    recsys::BruteForceRetrieval retrieval(10, false);
    retrieval.update_candidates(table);
    const int iters = candidates > 100000 ? 1 : 20;
    const double top_k = bench::median_seconds([&] { retrieval(queries); }, iters, 5, 1);
    // The product alone, 100 queries at a time (at 1M candidates the whole one is 4 GB).
    const double product = bench::median_seconds(
        [&] {
          for (int64_t q = 0; q < 1000; q += 100) {
            ops::matmul(queries.first_axis_slice(q, q + 100), table, {.transpose_b = true});
          }
        },
        iters, 5, 1);
    bench::emit({{"bench", "retrieval"}, {"case", "top_k"}, {"threads", args.threads}, {"queries", 1000},
                 {"candidates", candidates}, {"dim", 32}, {"k", 10}, {"ms_per_1000_queries", 1e3 * top_k},
                 {"product_only_ms", 1e3 * product}, {"ratio_to_product", top_k / product}});
  }
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  using namespace chorus;
  try {
    const Args args = parse_args(argc, argv);
    backend::cpu::set_intra_op_threads(args.threads);
    const auto start = Clock::now();
    const recipes::RetrievalDatasets data = recipes::get_retrieval_datasets(args.data_dir);
    for (auto it = data.train.iterator(0); it.next();) {
    }
    for (auto it = data.test.iterator(0); it.next();) {
    }
    bench::emit({{"bench", "retrieval"}, {"case", "load_and_cache"}, {"seconds", seconds_since(start)}});
    if (args.only.empty() || args.only == "tutorial") bench_tutorial(args, data);
    if (args.only.empty() || args.only == "breakdown") bench_breakdown(args, data);
    if (args.only.empty() || args.only == "ops") bench_ops(args, data);
    if (args.only.empty() || args.only == "floor") bench_floor(args, data);
    if (args.only.empty() || args.only == "top_k") bench_top_k(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "retrieval_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
