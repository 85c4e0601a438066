// Multi-worker benchmarks (issue 6), 2 worker processes on 127.0.0.1, one core each;
// this program starts them (itself, with CHORUS_BENCH_ROLE set) and prints JSON lines:
//   allreduce   16M (and 1M) floats through GlooCommunicator vs raw Gloo on a context of
//               its own, same processes, same run, alternating; ratio = raw / chorus time
//               against the faster raw algorithm (target >= 0.9).
//   overlap     the MNIST MLP (784-256-256-10, Adam) at global batch 256 on 2 workers:
//               step time, the compute-only step of each worker's 128 rows (2 lone
//               processes at once, so the cores are as busy) and the all-reduce of its
//               gradients alone; hidden share = (compute + comm - step) / comm, and
//               the hideable share: the all-reduce of the buckets ready before
//               backward ends over that of all. Each also in process CPU time, and the
//               CPU ceiling on the hidden share: 1 - comm CPU / comm wall.
//   retrieval   the MovieLens retrieval tutorial (50 epochs, validation every 5) on 2
//               workers: fit's wall time (validation included) and training steps/s
//               (the optimizer's step count over the time outside validation), the spans
//               the peer times, vs PyTorch DDP (gloo, 2 processes) from --torch-json
//               (bench/run_multi_worker measures it just before).
//   distributed_embedding  DistributedEmbedding (issue 21) on 2 workers, each keeping half
//               of two 1M-row tables: embedding_torch.py's step (batch 1000 of random
//               ids, Adagrad) per step vs PyTorch's sparse embeddings in one process
//               (--embedding-torch-json; ratio = torch time / chorus time), the bytes of
//               state per worker, and the retrieval tutorial on those tables (10 epochs).
// Usage: multi_worker_bench [--data ML100K_DIR] [--torch-json FILE] [--embedding-torch-json FILE]
//                           [--repeats N] [--only distributed_embedding]
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "bench/bench_util.h"
#include "chorus/chorus.h"
#include "chorus/cluster/tcp_store.h"
#include "chorus/cluster/worker_group.h"
#include "chorus/comm/gloo_communicator.h"
#include "chorus/distribution/initialize.h"
#include "chorus/replicas/gradient_reducer.h"
#include "tests/testing/worker_process.h"
#include "tools/chorus/recipes/retrieval_tutorial.h"

namespace chorus::bench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// CPU seconds this process has used, all threads, user and kernel (the loopback TCP
// copies run in the kernel on the sending and receiving threads).
double process_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// ---- worker roles: each returns rank 0's record --------------------------------------

json allreduce_role(int repeats) {
  const cluster::ClusterSpec cluster = cluster::discover_cluster();
  cluster::TcpStore store(cluster);
  comm::GlooCommunicator chorus_comm(cluster.rank, cluster.world_size, store, {.hostname = "127.0.0.1"});
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto raw = std::make_shared<gloo::rendezvous::Context>(cluster.rank, cluster.world_size);
  gloo::rendezvous::PrefixStore raw_store("raw", store);
  auto device = gloo::transport::tcp::CreateDevice(attr);
  raw->connectFullMesh(raw_store, device);
  json out = json::array();
  for (int64_t n : {int64_t{16}, int64_t{84160}, int64_t{1} << 20, int64_t{16} << 20}) {
    Tensor t = full({n}, 1.0);
    auto raw_run = [&](gloo::AllreduceOptions::Algorithm algorithm) {
      gloo::AllreduceOptions options(raw);
      options.setOutput(t.data<float>(), static_cast<size_t>(n));
      options.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      options.setAlgorithm(algorithm);
      gloo::allreduce(options);
    };
    std::vector<double> ours, ring, bcube;
    for (int r = 0; r < repeats + 1; ++r) {  // the first round warms up
      auto start = Clock::now();
      chorus_comm.all_reduce(t);
      const double a = since(start);
      start = Clock::now();
      raw_run(gloo::AllreduceOptions::Algorithm::RING);
      const double b = since(start);
      start = Clock::now();
      raw_run(gloo::AllreduceOptions::Algorithm::BCUBE);
      const double c = since(start);
      if (r == 0) continue;
      ours.push_back(a), ring.push_back(b), bcube.push_back(c);
    }
    const double best_raw = std::min(median(ring), median(bcube));
    const double bytes = static_cast<double>(n) * 4;
    out.push_back({{"floats", n},
                   {"chorus_s", median(ours)},
                   {"raw_ring_s", median(ring)},
                   {"raw_bcube_s", median(bcube)},
                   {"chorus_GBps", bytes / median(ours) / 1e9},
                   {"ratio", best_raw / median(ours)}});
  }
  return out;
}

std::unique_ptr<models::Model> mnist_mlp() {
  layers::set_random_seed(1);
  Tensor x = layers::Input({784});
  Tensor h = layers::Dense(256, {.activation = "relu"})(x);
  h = layers::Dense(256, {.activation = "relu"})(h);
  return std::make_unique<models::Model>(x, layers::Dense(10)(h));
}

struct StepTime {
  double wall_s = 0, cpu_s = 0;  // per step, medians over the repeats
};

// Time per step of `steps` steps of `batch` rows (after one warm-up epoch).
StepTime mlp_step_time(models::Model& model, int64_t batch, int64_t steps, int repeats) {
  Generator gen(3);
  Tensor x = uniform(Shape{batch * steps, 784}, gen, 0, 1);
  Tensor y = Tensor::empty({batch * steps}, kInt32);
  for (int64_t i = 0; i < batch * steps; ++i) y.data<int32_t>()[i] = static_cast<int32_t>(i % 10);
  auto data = data::Dataset::from_tensor_slices(Tree::list({x, y})).batch(batch);
  model.fit(data, {.epochs = 1, .verbose = 0});
  std::vector<double> walls, cpus;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    const double cpu_start = process_cpu_seconds();
    model.fit(data, {.epochs = 1, .verbose = 0});
    cpus.push_back((process_cpu_seconds() - cpu_start) / static_cast<double>(steps));
    walls.push_back(since(start) / static_cast<double>(steps));
  }
  return {median(walls), median(cpus)};
}

void compile_mlp(models::Model& model) {
  model.compile({.optimizer = optimizers::Adam(1e-3),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
}

json overlap_role(int repeats) {
  distribute::MultiWorkerMirroredStrategy strategy;
  auto model = mnist_mlp();
  {
    auto scope = strategy.scope();
    compile_mlp(*model);
  }
  const StepTime step = mlp_step_time(*model, 256, 40, repeats);
  // The gradients alone through the same communicator, as the step's buckets go.
  int64_t params = 0;
  for (const auto& v : model->trainable_weights()) params += v.value().numel();
  Tensor grads = full({params}, 1.0);
  auto& workers = strategy.distribution()->workers()->communicator();
  std::vector<double> cpu_times;
  auto comm_of = [&](const Tensor& t) {
    std::vector<double> times;
    cpu_times.clear();
    for (int r = 0; r < 20; ++r) {
      const auto start = Clock::now();
      const double cpu_start = process_cpu_seconds();
      workers.all_reduce(t);
      cpu_times.push_back(process_cpu_seconds() - cpu_start);
      times.push_back(since(start));
    }
    return median(times);
  };
  // The gradient buckets as GradientReducer plans them: all but the last are ready
  // before backward ends; the last (the first layer kernel's last row block) only when it
  // has, so nothing can hide it.
  const auto weights = model->trainable_weights();
  const std::vector<int64_t> buckets =
      replicas::GradientReducer::plan_buckets(weights, replicas::gradient_bucket_bytes_from_env());
  const int64_t early = params - buckets.back();
  const double comm = comm_of(grads);
  const double comm_cpu = median(cpu_times);
  return {{"step_s", step.wall_s},
          {"step_cpu_s", step.cpu_s},
          {"comm_s", comm},
          {"comm_cpu_s", comm_cpu},
          {"early_comm_s", early > 0 ? comm_of(full({early}, 1.0)) : 0.0},
          {"gradient_floats", params},
          {"buckets", buckets}};
}

json overlap_alone_role(int repeats) {
  auto model = mnist_mlp();
  compile_mlp(*model);
  const StepTime step = mlp_step_time(*model, 128, 40, repeats);
  return {{"step_s", step.wall_s}, {"step_cpu_s", step.cpu_s}};
}

// Sums the time fit spends in validation, which the peer's steps/s leaves out too.
class ValidationTimer : public models::Callback {
 public:
  double seconds = 0;
  void on_test_begin(const models::Logs& /*logs*/) override { start_ = Clock::now(); }
  void on_test_end(const models::Logs& /*logs*/) override { seconds += since(start_); }

 private:
  Clock::time_point start_;
};

// The tutorial as recipes::run_retrieval_tutorial sets it up, timed over the span the
// peer times: from after loading (caches filled) and a barrier to the end of fit,
// validation included (total_wall_s); steps/s over the training time alone, with the
// steps the optimizer took.
json retrieval_role(const std::string& data_dir) {
  distribution::initialize(cluster::discover_cluster());
  layers::set_random_seed(42);
  const recipes::RetrievalDatasets datasets = recipes::get_retrieval_datasets(data_dir);
  for (const data::Dataset& ds : {datasets.train, datasets.test}) {
    for (auto it = ds.iterator(0); it.next();) {
    }
  }
  recipes::RetrievalModel model(datasets.users_count + 1, datasets.movies_count + 1);
  {
    auto scope = distribution::DataParallel(chorus::list_devices()).scope();
    model.compile({.optimizer = optimizers::Adagrad(0.2)});
  }
  distribution::worker_group()->communicator().barrier();
  auto validation = std::make_shared<ValidationTimer>();
  const auto start = Clock::now();
  models::History history = model.fit(datasets.train, {.epochs = 50,
                                                       .verbose = 0,
                                                       .callbacks = {validation},
                                                       .validation_data = datasets.test,
                                                       .validation_freq = 5});
  const double wall = since(start), train = wall - validation->seconds;
  const int64_t steps = model.optimizer().iterations();
  return {{"total_wall_s", wall},
          {"train_s", train},
          {"steps", steps},
          {"steps_per_s", static_cast<double>(steps) / train},
          {"val_loss", history.history.at("val_loss").back()}};
}

// The retrieval tutorial's two towers as DistributedEmbedding tables of `rows` rows each,
// split across the workers: the query tower in call, the candidate tower in the loss.
class SplitTablesTwoTower : public models::Model {
 public:
  explicit SplitTablesTwoTower(int64_t rows)
      : user_(add<recsys::DistributedEmbedding>(features("user_id", rows))),
        movie_(add<recsys::DistributedEmbedding>(features("movie_id", rows))) {}
  Tree call(const Tree& x, bool) override { return (*user_)(x); }
  Tensor compute_loss(const Tree&, const Tree& y, const Tree& y_pred, const Tensor&) override {
    Tensor scores = ops::sum(y_pred.tensor() * (*movie_)(y["movie_id"].tensor()), 1, true);
    return losses::MeanSquaredError()(ops::expand_dims(y["rating"].tensor(), -1), scores);
  }

 private:
  static std::vector<recsys::FeatureConfig> features(const std::string& name, int64_t rows) {
    auto table = std::make_shared<recsys::TableConfig>(recsys::TableConfig{
        .name = name + "_table", .vocabulary_size = rows, .embedding_dim = 32, .initializer = "uniform"});
    return {{.name = name, .table = table}};
  }
  recsys::DistributedEmbedding* user_;
  recsys::DistributedEmbedding* movie_;
};

// embedding_torch.py's step on 2 workers: batches of 1000 random (user, movie) ids out of
// 1M-row tables, Adagrad(0.2); then the retrieval tutorial (MovieLens 100K) with both
// tables grown to 1M rows, 10 epochs with validation every 5. Each worker keeps half of
// each table and of its Adagrad accumulators.
json distributed_embedding_role(const std::string& data_dir, int repeats) {
  constexpr int64_t kRows = 1'000'000, kBatch = 1000;
  distribution::initialize(cluster::discover_cluster());
  layers::set_random_seed(42);
  const auto compile = [](models::Model& model) {
    auto scope = distribution::DataParallel(chorus::list_devices()).scope();
    model.compile({.optimizer = optimizers::Adagrad(0.2)});
  };
  SplitTablesTwoTower model(kRows);
  compile(model);
  Generator gen(7);
  const auto ids = [&] { return ops::cast(uniform(Shape{8 * kBatch}, gen, 0, kRows - 1), kInt32); };
  const data::Dataset random_ids = data::Dataset::from_tensor_slices(
      Tree::list({ids(), Tree{{"movie_id", ids()}, {"rating", uniform(Shape{8 * kBatch}, gen, 0, 1)}}})).batch(kBatch);
  model.fit(random_ids, {.epochs = 2, .verbose = 0, .shuffle = false});  // warm-up
  std::vector<double> step_s;
  for (int r = 0; r < repeats; ++r) {
    distribution::worker_group()->communicator().barrier();
    const auto start = Clock::now();
    model.fit(random_ids, {.epochs = 10, .verbose = 0, .shuffle = false});
    step_s.push_back(since(start) / 80);
  }
  const models::StateBytes bytes = models::state_bytes(model);

  const recipes::RetrievalDatasets datasets = recipes::get_retrieval_datasets(data_dir);
  SplitTablesTwoTower tutorial(kRows);
  compile(tutorial);
  distribution::worker_group()->communicator().barrier();
  const auto start = Clock::now();
  models::History history = tutorial.fit(
      datasets.train, {.epochs = 10, .verbose = 0, .validation_data = datasets.test, .validation_freq = 5});
  return {{"random_ids_us_per_step", 1e6 * median(step_s)},
          {"state_bytes_per_worker", bytes.per_device[0]},
          {"state_bytes_whole", bytes.whole},
          {"tutorial_wall_s", since(start)},
          {"tutorial_steps", tutorial.optimizer().iterations()},
          {"tutorial_loss", history.history.at("loss").back()},
          {"tutorial_val_loss", history.history.at("val_loss").back()}};
}

// ---- the parent: starts the workers and reports --------------------------------------

struct Args {
  std::string data, torch_json, embedding_torch_json, only;
  int repeats = 5;
};

// Runs `role` on `world` processes (a job when world > 1; lone processes otherwise, all
// at once) and returns rank 0's record.
json run_role(const std::string& role, int count, bool job, const Args& args) {
  const std::string out = (std::filesystem::temp_directory_path() / ("chorus_mw_bench_" + std::to_string(::getpid())))
                              .string();
  std::filesystem::create_directories(out);
  const int port = 29500 + (::getpid() % 2000);
  std::vector<pid_t> pids;
  for (int r = 0; r < count; ++r) {
    const std::vector<std::string> role_env = {"CHORUS_BENCH_ROLE=" + role,
                                               "CHORUS_BENCH_OUT=" + out + "/" + std::to_string(r),
                                               "CHORUS_CPU_DEVICES=1", "CHORUS_CPU_CORES=1", "OMP_NUM_THREADS=1"};
    const std::vector<std::string> env = job ? testing::worker_environment(r, count, port, "bench-" + role, role_env)
                                             : testing::with_parent_environment(role_env);
    pids.push_back(testing::spawn_self({"--data", args.data, "--repeats", std::to_string(args.repeats)}, env,
                                       /*quiet=*/false));
  }
  for (pid_t pid : pids) {
    if (testing::wait_exit(pid, std::chrono::seconds(3600)) != 0) {
      throw std::runtime_error("multi_worker_bench: a " + role + " worker failed");
    }
  }
  std::ifstream in(out + "/0");
  json record = json::parse(in);
  std::filesystem::remove_all(out);
  return record;
}

// DistributedEmbedding on 2 workers against PyTorch's sparse embeddings in one process
// (embedding_torch.py's line for 1M rows, sparse, from --embedding-torch-json).
json distributed_embedding_record(const Args& args) {
  json record = {{"bench", "distributed_embedding"}, {"processes", 2}, {"rows", 1000000}, {"batch", 1000},
                 {"chorus", run_role("distributed_embedding", 2, true, args)}};
  std::ifstream in(args.embedding_torch_json);
  for (std::string line; std::getline(in, line);) {
    const json t = line.empty() ? json() : json::parse(line);
    if (t.is_object() && t.at("rows") == 1000000 && t.at("sparse") == true) {
      record["torch_sparse_us_per_step"] = t.at("us_per_step");
      record["ratio"] = t.at("us_per_step").get<double>() / record["chorus"].at("random_ids_us_per_step").get<double>();
    }
  }
  return record;
}

int parent(const Args& args) {
  if (args.only == "distributed_embedding") {
    emit(distributed_embedding_record(args));
    return 0;
  }
  json allreduce = run_role("allreduce", 2, true, args);
  emit({{"bench", "multi_worker_allreduce"}, {"processes", 2}, {"sizes", allreduce}});

  json overlap = run_role("overlap", 2, true, args);
  json alone = run_role("overlap_alone", 2, false, args);
  const double step = overlap.at("step_s"), compute = alone.at("step_s"), comm = overlap.at("comm_s");
  emit({{"bench", "multi_worker_overlap"},
        {"model", "mnist_mlp 784-256-256-10"},
        {"global_batch", 256},
        {"step_s", step},
        {"compute_only_step_s", compute},
        {"comm_only_s", comm},
        {"step_cpu_s", overlap.at("step_cpu_s")},
        {"compute_only_cpu_s", alone.at("step_cpu_s")},
        {"comm_only_cpu_s", overlap.at("comm_cpu_s")},
        {"bucket_floats", overlap.at("buckets")},
        {"hidden_share", std::clamp((compute + comm - step) / comm, 0.0, 1.0)},
        // Each worker has one core and its compute keeps it busy, so a step takes at
        // least compute + the CPU time of its communication: at most this share can hide.
        {"hidden_share_cpu_ceiling", std::clamp(1.0 - overlap.at("comm_cpu_s").get<double>() / comm, 0.0, 1.0)},
        // The most that could hide: the buckets ready before backward ends.
        {"hideable_share", std::min(1.0, overlap.at("early_comm_s").get<double>() / comm)}});

  if (!args.data.empty()) emit(distributed_embedding_record(args));
  if (!args.data.empty()) {
    json retrieval = run_role("retrieval", 2, true, args);
    json record = {{"bench", "multi_worker_retrieval"}, {"processes", 2}, {"chorus", retrieval}};
    if (!args.torch_json.empty()) {
      std::ifstream in(args.torch_json);
      std::vector<double> rates, walls;
      for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        const json t = json::parse(line);
        rates.push_back(t.at("steps_per_s").get<double>());
        walls.push_back(t.at("total_wall_s").get<double>());
      }
      if (!rates.empty()) {
        record["torch_ddp"] = {{"steps_per_s", median(rates)}, {"total_wall_s", median(walls)}};
        record["ratio_steps_per_s"] = retrieval.at("steps_per_s").get<double>() / median(rates);
        record["ratio_wall"] = median(walls) / retrieval.at("total_wall_s").get<double>();
      }
    }
    emit(record);
  }
  return 0;
}

}  // namespace
}  // namespace chorus::bench

int main(int argc, char** argv) {
  using namespace chorus::bench;
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--data") args.data = argv[i + 1];
    else if (flag == "--torch-json") args.torch_json = argv[i + 1];
    else if (flag == "--embedding-torch-json") args.embedding_torch_json = argv[i + 1];
    else if (flag == "--only") args.only = argv[i + 1];
    else if (flag == "--repeats") args.repeats = std::stoi(argv[i + 1]);
  }
  const char* role = std::getenv("CHORUS_BENCH_ROLE");
  if (role == nullptr) return parent(args);
  json record;
  const std::string r = role;
  if (r == "allreduce") record = allreduce_role(args.repeats);
  else if (r == "overlap") record = overlap_role(args.repeats);
  else if (r == "overlap_alone") record = overlap_alone_role(args.repeats);
  else if (r == "distributed_embedding") record = distributed_embedding_role(args.data, args.repeats);
  else record = retrieval_role(args.data);
  const char* rank = std::getenv("RANK");
  if (rank == nullptr || std::string(rank) == "0") std::ofstream(std::getenv("CHORUS_BENCH_OUT")) << record.dump();
  return 0;
}
