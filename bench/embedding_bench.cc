// Training steps of the retrieval tutorial's two-tower model (tools/chorus/recipes/retrieval_tutorial.h)
// with both tables grown to V rows, batch 1000, Adagrad(0.2), one thread: what a large
// vocabulary costs. Per V:
//   sparse_us  a train step as Model::train_step takes it: the tables' gradients stay
//              IndexedSlices and Adagrad updates only the rows the batch read (when
//              V >= 2 x 1000 rows);
//   dense_us   the same step with dense gradients (a V-row zero-fill, scatter-add and
//              full-table Adagrad pass per table), as before sparse gradients;
//   torch_*    PyTorch's nn.Embedding(sparse=True / False) + torch.optim.Adagrad, measured
//              by bench/embedding_torch.py just before (bench/run_embedding), if given.
// Both variants give the same weights bit for bit (tests/recipes/retrieval_tutorial_test.cc).
// With --devices N instead: model.fit on N data-parallel devices against one device.
// Usage: embedding_bench [--rows V,V,...] [--torch-json FILE | --devices N]
#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/chorus.h"
#include "tools/chorus/recipes/retrieval_tutorial.h"

namespace chorus {
namespace {

constexpr int64_t kBatch = 1000;

struct Batch {
  Tensor users;
  Tree y;
};

std::vector<Batch> make_batches(int64_t rows, int count) {
  Generator gen(3);
  std::vector<Batch> batches;
  for (int i = 0; i < count; ++i) {
    const Tensor users = ops::cast(uniform(Shape{kBatch}, gen, 0, static_cast<double>(rows)), kInt32);
    const Tensor movies = ops::cast(uniform(Shape{kBatch}, gen, 0, static_cast<double>(rows)), kInt32);
    batches.push_back({users, Tree{{"movie_id", movies}, {"rating", uniform(Shape{kBatch}, gen, 0, 1)}}});
  }
  return batches;
}

// One step of Model::train_step's work (forward, loss, gradients, update), with the
// tables' gradients sparse (as train_step asks for them) or dense (as before).
void step(recipes::RetrievalModel& model, const Batch& batch, bool sparse) {
  autograd::GradientTape tape;
  const Tensor loss = model.compute_loss(Tree(batch.users), batch.y, model(Tree(batch.users), /*training=*/true));
  const std::vector<autograd::Variable> variables = model.trainable_weights();
  const std::vector<Tensor> sources(variables.begin(), variables.end());
  std::vector<autograd::IndexedSlices> slices;
  const std::vector<Tensor> grads = sparse ? tape.gradient(loss, sources, &slices) : tape.gradient(loss, sources);
  model.optimizer().apply_gradients(grads, variables, slices);
}

double step_us(int64_t rows, bool sparse) {
  layers::set_random_seed(1);
  recipes::RetrievalModel model(rows, rows);
  model.compile({.optimizer = optimizers::Adagrad(0.2)});
  const std::vector<Batch> batches = make_batches(rows, 8);
  size_t next = 0;
  auto one = [&] { step(model, batches[next++ % batches.size()], sparse); };
  return 1e6 * bench::median_seconds(one, bench::calibrate_iters(one, 0.05));
}

// µs per step of model.fit on `devices` data-parallel devices (1: no distribution),
// 40 batches an epoch, after a warm-up epoch: the tables' rows are exchanged between the
// replicas when they have GradientReducer::kRowExchangeMinRows rows or more, else
// all-reduced whole.
double fit_step_us(int64_t rows, int devices) {
  constexpr int kBatchesPerEpoch = 40;
  std::optional<distribution::DistributionScope> scope;
  if (devices > 1) {
    std::vector<Device> list;
    for (int i = 0; i < devices; ++i) list.push_back(Device::cpu(i));
    scope.emplace(distribution::DataParallel(list).scope());
  }
  layers::set_random_seed(1);
  recipes::RetrievalModel model(rows, rows);
  model.compile({.optimizer = optimizers::Adagrad(0.2)});
  scope.reset();
  std::vector<Tensor> users, movies, ratings;
  for (const Batch& batch : make_batches(rows, kBatchesPerEpoch)) {
    users.push_back(batch.users);
    movies.push_back(batch.y["movie_id"].tensor());
    ratings.push_back(batch.y["rating"].tensor());
  }
  const data::Dataset train =
      data::Dataset::from_tensor_slices(Tree::list({ops::concatenate(users), Tree{{"movie_id", ops::concatenate(movies)},
                                                                                 {"rating", ops::concatenate(ratings)}}}))
          .batch(kBatch)
          .cache();
  model.fit(train, {.epochs = 1, .verbose = 0});
  constexpr int kEpochs = 3;
  const auto start = std::chrono::steady_clock::now();
  model.fit(train, {.epochs = kEpochs, .verbose = 0});
  const std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / (kEpochs * kBatchesPerEpoch);
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  using namespace chorus;
  std::vector<int64_t> rows_list{1000, 10000, 100000, 1000000};
  std::map<std::pair<int64_t, bool>, double> torch_us;
  int devices = 0;  // --devices N: fit on N data-parallel devices against one instead
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rows" && i + 1 < argc) {
      rows_list.clear();
      std::stringstream list(argv[++i]);
      for (std::string item; std::getline(list, item, ',');) rows_list.push_back(std::stoll(item));
    } else if (a == "--devices" && i + 1 < argc) {
      devices = std::max(2, std::atoi(argv[++i]));
    } else if (a == "--torch-json" && i + 1 < argc) {
      std::ifstream in(argv[++i]);
      for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] != '{') continue;
        const auto j = nlohmann::json::parse(line);
        torch_us[{j.at("rows").get<int64_t>(), j.at("sparse").get<bool>()}] = j.at("us_per_step").get<double>();
      }
    } else {
      std::fprintf(stderr, "embedding_bench: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  backend::cpu::set_intra_op_threads(1);
  if (devices > 0) {
    // The first few pools of replica threads in a process run slowly (fresh malloc arenas
    // and caches for each new thread): warm them up once, untimed.
    for (int i = 0; i < 3; ++i) fit_step_us(1000, devices);
    for (const int64_t rows : rows_list) {
      const double one = fit_step_us(rows, 1), many = fit_step_us(rows, devices);
      bench::emit({{"bench", "embedding_data_parallel"}, {"rows", rows},    {"batch", kBatch},
                   {"devices", devices},                {"one_device_us", one}, {"devices_us", many},
                   {"speedup", one / many}});
    }
    return 0;
  }
  for (const int64_t rows : rows_list) {
    const double sparse = step_us(rows, true);
    const double dense = step_us(rows, false);
    nlohmann::json record = {{"bench", "embedding"}, {"rows", rows},          {"batch", kBatch},
                             {"sparse_us", sparse},  {"dense_us", dense},     {"dense_over_sparse", dense / sparse}};
    if (torch_us.count({rows, true})) {
      record["torch_sparse_us"] = torch_us[{rows, true}];
      record["torch_dense_us"] = torch_us[{rows, false}];
      record["ratio_vs_torch_sparse"] = torch_us[{rows, true}] / sparse;
    }
    bench::emit(record);
  }
  return 0;
}
