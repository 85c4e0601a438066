// Fully sharded data parallelism (issue 39's benchmarks):
//   speed         fit steps/s of DataParallel with Shard::kFull on 2 devices (one core each)
//                 against plain DataParallel on the same 2, alternated, for an MLP of
//                 Dense(d, 4d, gelu) + Dense(4d, d) blocks (compute dominates) and for
//                 BERT-tiny's masked LM (the preset's shapes, dropout 0, sequences of 128);
//                 the target: a ratio >= 0.85.
//   memory        a 201 M-parameter MLP (12 Dense 4096 x 4096 kernels, no biases) with
//                 Adam, whose state exceeds CHORUS_DEVICE_MEMORY_LIMIT on one device (the
//                 refusal is recorded) and trains under FSDP on 4 devices: the largest
//                 device's parameter + gradient + optimizer bytes, counted from the layouts,
//                 against one device's; the target: <= 0.3.
//   peak_rss      the same model, one training step, as a job of 2 workers (one device
//                 each, FSDP over both) and of 1: each worker's peak resident memory (VmHWM);
//                 the target: 2-worker / 1-worker <= 0.6.
// Usage: fsdp_bench [--case speed|memory|peak_rss|all] [--steps N] [--repeats R]. One JSON
// line per measurement (bench_util.h emit).
#include <chrono>
#include <fstream>

#include "bench/bench_util.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/chorus.h"
#include "chorus/distribution/initialize.h"
#include "tests/testing/worker_process.h"

namespace chorus::bench {
namespace {

namespace dist = chorus::distribution;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::shared_ptr<dist::DataParallel> data_parallel(std::vector<Device> devices, dist::Shard shard) {
  return std::make_shared<dist::DataParallel>(std::move(devices), dist::DataParallelOptions{.shard = shard});
}

std::unique_ptr<models::Model> mlp_blocks(int64_t d, int blocks) {
  Tensor x = layers::Input({d});
  Tensor h = x;
  for (int b = 0; b < blocks; ++b) {
    h = layers::Dense(4 * d, {.activation = "gelu", .name = fmt::format("up{}", b)})(h);
    h = layers::Dense(d, {.name = fmt::format("down{}", b)})(h);
  }
  return std::make_unique<models::Model>(x, h);
}

// `rows` BERT inputs of length 128 with 20 masked positions each: (x, y, sample_weight).
data::Dataset mlm_rows(int64_t rows, int64_t vocabulary, int64_t batch) {
  constexpr int64_t kLength = 128, kMasked = 20;
  Generator gen(7);
  const Tensor draws = uniform(Shape{rows, kLength}, gen);
  std::vector<int32_t> ids(static_cast<size_t>(rows * kLength)), positions, labels;
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = 5 + static_cast<int32_t>(draws.data<float>()[i] * (vocabulary - 6));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t m = 0; m < kMasked; ++m) {
      positions.push_back(static_cast<int32_t>(m * 6 + 1));
      labels.push_back(ids[static_cast<size_t>(r * kLength + m * 6 + 1)]);
    }
  }
  const Tree x{{"token_ids", from_values<int32_t>(ids, Shape{rows, kLength})},
               {"segment_ids", zeros({rows, kLength}, kInt32)},
               {"padding_mask", ones({rows, kLength}, kInt32)},
               {"mask_positions", from_values<int32_t>(positions, Shape{rows, kMasked})}};
  return data::Dataset::from_tensor_slices(Tree::list({x, from_values<int32_t>(labels, Shape{rows, kMasked}),
                                                       ones({rows, kMasked})}))
      .batch(batch);
}

// Steps/s of plain DataParallel and of FSDP on 2 devices, fit alternately.
void speed_of(const std::string& model_name, const std::function<std::unique_ptr<models::Model>()>& make,
              const data::Dataset& dataset, int steps, int repeats) {
  std::vector<std::unique_ptr<models::Model>> models;
  for (dist::Shard shard : {dist::Shard::kNone, dist::Shard::kFull}) {
    layers::set_random_seed(1);
    dist::set_distribution(data_parallel({Device::cpu(0), Device::cpu(1)}, shard));
    models.push_back(make());
    dist::set_distribution(nullptr);
    models.back()->fit(dataset, {.verbose = 0, .steps_per_epoch = 2});  // warm-up: slots, threads, pages
  }
  std::vector<double> seconds[2];
  for (int r = 0; r < repeats; ++r) {  // alternate, so drift hits both alike
    for (size_t m = 0; m < 2; ++m) {
      const auto start = Clock::now();
      models[m]->fit(dataset, {.verbose = 0, .steps_per_epoch = steps});
      seconds[m].push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
  }
  emit({{"bench", "fsdp"},
        {"measure", "speed"},
        {"model", model_name},
        {"steps", steps},
        {"data_parallel_steps_per_second", steps / median(seconds[0])},
        {"fsdp_steps_per_second", steps / median(seconds[1])},
        {"ratio", median(seconds[0]) / median(seconds[1])}});
}

void speed(int steps, int repeats) {
  constexpr int64_t kWidth = 512, kBatch = 256;
  Generator gen(1);
  const Tensor x = uniform(Shape{kBatch * steps, kWidth}, gen, -1, 1);
  speed_of(
      "mlp_512x2048_2_blocks",
      [] {
        auto model = mlp_blocks(kWidth, 2);
        model->compile({.optimizer = "adam", .loss = "mse"});
        return model;
      },
      data::Dataset::from_tensor_slices(Tree::list({x, x})).batch(kBatch).repeat(), steps, repeats);
  models::BertBackboneConfig config = models::find_bert_preset("bert_tiny_en_uncased").config;
  config.dropout = 0.0;
  speed_of(
      "bert_tiny_mlm_seq128_batch32",
      [&] {
        auto model = std::make_unique<models::BertMaskedLM>(config);
        model->get_layer("bert_backbone").get_layer("pooled_dense").set_trainable(false);  // as the tutorial
        model->compile(
            {.optimizer = "adam",
             .loss = losses::SparseCategoricalCrossentropy({.from_logits = true, .reduction = "mean_with_sample_weight"})});
        return model;
      },
      mlm_rows(32 * 4, config.vocabulary_size, 32).repeat(), steps, repeats);
}

constexpr int64_t kBigWidth = 4096;
constexpr int kBigLayers = 12;

std::unique_ptr<models::Model> big_mlp() {
  Tensor x = layers::Input({kBigWidth});
  Tensor h = x;
  for (int i = 0; i < kBigLayers; ++i) h = layers::Dense(kBigWidth, {.use_bias = false, .name = fmt::format("d{}", i)})(h);
  return std::make_unique<models::Model>(x, h);
}

void memory() {
  const int64_t parameters = kBigLayers * kBigWidth * kBigWidth;
  const int64_t limit = 3 * 4 * parameters / 2;  // half of the weights and Adam's state
  ::setenv("CHORUS_DEVICE_MEMORY_LIMIT", std::to_string(limit).c_str(), 1);
  Generator gen(2);
  const Tensor x = uniform(Shape{8, kBigWidth}, gen, -1, 1);
  std::string refusal;
  try {
    auto one = big_mlp();
    one->compile({.optimizer = "adam", .loss = "mse"});
    one->fit(x, x, {.batch_size = 8, .verbose = 0});
  } catch (const ResourceExhaustedError& e) {
    refusal = e.what();
  }
  std::unique_ptr<models::Model> model;
  {
    auto scope = data_parallel({Device::cpu(0), Device::cpu(1), Device::cpu(2), Device::cpu(3)}, dist::Shard::kFull)->scope();
    model = big_mlp();
    model->compile({.optimizer = "adam", .loss = "mse"});
  }
  const auto start = Clock::now();
  model->fit(x, x, {.batch_size = 8, .verbose = 0});
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ::unsetenv("CHORUS_DEVICE_MEMORY_LIMIT");
  const models::DeviceStatePlan plan = *models::device_state_plan(*model);
  const auto total = [](const models::StateParts& p) { return p.parameters + p.gradients + p.optimizer; };
  emit({{"bench", "fsdp"},
        {"measure", "memory"},
        {"parameters", parameters},
        {"devices", 4},
        {"limit_bytes", limit},
        {"one_device_refused", !refusal.empty()},
        {"one_device_error", refusal},
        {"largest_device_bytes", total(plan.largest_device)},
        {"one_device_bytes", total(plan.one_device)},
        {"ratio", static_cast<double>(total(plan.largest_device)) / static_cast<double>(total(plan.one_device))},
        {"counted_largest_device_state_bytes", models::state_bytes(*model).largest()},
        {"fsdp_step_seconds", seconds}});
}

int64_t peak_resident_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  throw std::runtime_error("fsdp_bench: no VmHWM in /proc/self/status");
}

// One worker of a peak_rss job: the big MLP, one step with Adam, under FSDP over the job's
// devices when there are several workers.
json peak_rss_worker() {
  std::shared_ptr<dist::Distribution> distribution;
  if (std::stoi(std::getenv("CHORUS_BENCH_WORKERS")) > 1) {
    dist::initialize(cluster::discover_cluster());
    distribution = data_parallel(dist::list_devices(), dist::Shard::kFull);
  }
  layers::set_random_seed(1);
  std::unique_ptr<models::Model> model;
  {
    dist::DistributionScope scope(distribution);
    model = big_mlp();
    model->compile({.optimizer = "adam", .loss = "mse"});
  }
  Generator gen(3);
  const Tensor x = uniform(Shape{8, kBigWidth}, gen, -1, 1);
  model->fit(x, x, {.batch_size = 8, .verbose = 0});
  return {{"peak_resident_bytes", peak_resident_bytes()}};
}

void peak_rss() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("chorus_fsdp_bench_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  json peaks;
  for (int workers : {1, 2}) {
    const int port = 29500 + (::getpid() % 2000) + workers;
    std::vector<pid_t> pids;
    for (int r = 0; r < workers; ++r) {
      const std::vector<std::string> role_env = {
          "CHORUS_BENCH_ROLE=worker", "CHORUS_BENCH_OUT=" + (dir / fmt::format("{}_{}", workers, r)).string(),
          fmt::format("CHORUS_BENCH_WORKERS={}", workers), "CHORUS_CPU_DEVICES=1", "OMP_NUM_THREADS=1"};
      pids.push_back(testing::spawn_self({"--case", "peak_rss"},
                                         testing::worker_environment(r, workers, port, "fsdp-bench", role_env), false));
    }
    for (pid_t pid : pids) {
      if (testing::wait_exit(pid, std::chrono::seconds(1800)) != 0) throw std::runtime_error("fsdp_bench: a worker failed");
    }
    for (int r = 0; r < workers; ++r) {
      peaks[std::to_string(workers)].push_back(
          json::parse(std::ifstream(dir / fmt::format("{}_{}", workers, r))).at("peak_resident_bytes"));
    }
  }
  fs::remove_all(dir);
  const double one = peaks["1"][0].get<double>();
  const double two = std::max(peaks["2"][0].get<double>(), peaks["2"][1].get<double>());
  emit({{"bench", "fsdp"},
        {"measure", "peak_rss"},
        {"parameters", kBigLayers * kBigWidth * kBigWidth},
        {"one_worker_peak_bytes", one},
        {"two_worker_peak_bytes", peaks["2"]},
        {"ratio", two / one}});
}

}  // namespace
}  // namespace chorus::bench

int main(int argc, char** argv) {
  namespace cb = chorus::bench;
  std::string which = "all";
  int steps = 8, repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--case") which = argv[i + 1];
    if (flag == "--steps") steps = std::atoi(argv[i + 1]);
    if (flag == "--repeats") repeats = std::atoi(argv[i + 1]);
  }
  if (std::getenv("CHORUS_BENCH_ROLE") != nullptr) {
    std::ofstream(std::getenv("CHORUS_BENCH_OUT")) << cb::peak_rss_worker().dump();
    return 0;
  }
  chorus::set_cpu_devices(4);
  chorus::backend::cpu::set_intra_op_threads(1);  // each device: one core
  if (which == "speed" || which == "all") cb::speed(steps, repeats);
  if (which == "memory" || which == "all") cb::memory();
  if (which == "peak_rss" || which == "all") cb::peak_rss();
  return 0;
}
