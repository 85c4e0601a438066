// Checkpoints in shards against the gathered format (issue 39), on 2 worker processes on
// 127.0.0.1, one device each: a 201 M-parameter MLP (12 Dense 4096 x 4096 kernels, no
// biases) whose kernels ModelParallel splits by columns over a (1, 2) mesh spanning the
// workers, so each keeps half of every kernel (402 MB of its 805 MB). Each rank times:
//   save_sharded    Model::save_weights: shards, every rank gathering one kernel at a time
//                   and writing its own file;
//   save_gathered   what save_weights did before: every kernel gathered whole on every
//                   rank (models::whole_values), rank 0 writing one file;
//   load_sharded    Model::load_weights of the shards: each rank maps the files and copies
//                   out its own columns;
//   load_gathered   the whole file read into memory, then each kernel's columns assigned.
// and the peak of its resident memory during each, above what it held before (VmHWM
// after resetting it through /proc/self/clear_refs, the allocator's cache of freed blocks
// emptied first), against the largest kernel's bytes: the target is a peak of at most its
// own shards (held before and after) + the largest tensor.
// Usage: checkpoint_bench [--dir DIR] (default: a directory under the system's temp).
#include <malloc.h>

#include <fstream>

#include "bench/bench_util.h"
#include "chorus/chorus.h"
#include "chorus/cluster/worker_group.h"
#include "chorus/core/sharding.h"
#include "chorus/core/storage.h"
#include "chorus/distribution/initialize.h"
#include "chorus/io/safetensors.h"
#include "chorus/models/whole_values.h"
#include "tests/testing/worker_process.h"

namespace chorus::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int64_t kWidth = 4096;
constexpr int kLayers = 12;

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM").
int64_t status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  }
  throw std::runtime_error("checkpoint_bench: no " + field + " in /proc/self/status");
}

// Seconds `fn` took and the peak resident bytes above those held when it began.
json measure(const std::function<void()>& fn) {
  release_cached_host_memory();  // what earlier phases freed leaves the process first
  ::malloc_trim(0);
  std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM := VmRSS
  const int64_t before = status_bytes("VmRSS");
  const auto start = Clock::now();
  fn();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return {{"seconds", seconds}, {"peak_extra_bytes", status_bytes("VmHWM") - before}};
}

json worker_role(const fs::path& dir) {
  distribution::initialize(cluster::discover_cluster());
  cluster::WorkerGroup& group = *distribution::worker_group();
  layers::set_random_seed(1);
  Tensor x = layers::Input({kWidth});
  Tensor h = x;
  for (int i = 0; i < kLayers; ++i) h = layers::Dense(kWidth, {.use_bias = false, .name = fmt::format("d{}", i)})(h);
  models::Model model(x, h);
  distribution::LayoutMap layouts(distribution::DeviceMesh({1, 2}, {"batch", "model"}, distribution::list_devices()));
  layouts[".*/kernel"] = {std::nullopt, "model"};
  {
    auto scope = distribution::ModelParallel(layouts, "batch").scope();
    model.compile({.optimizer = optimizers::SGD(0.0), .loss = "mse"});
  }
  Generator gen(3);
  const Tensor rows = uniform(Shape{2, kWidth}, gen, -1, 1);
  model.fit(rows, rows, {.batch_size = 2, .verbose = 0});  // placed on the mesh: each rank keeps its halves

  int64_t own = 0;
  for (const autograd::Variable& v : model.weights()) {
    chorus::LocalShardScope local;
    for (const Tensor& t : v.device_values()) own += static_cast<int64_t>(t.nbytes());
  }
  const fs::path gathered = dir / "gathered.safetensors";
  json record = {{"rank", group.rank()},
                 {"own_shard_bytes", own},
                 {"largest_tensor_bytes", kWidth * kWidth * 4},
                 {"model_bytes", kLayers * kWidth * kWidth * 4}};
  group.communicator().barrier();
  record["save_sharded"] = measure([&] { model.save_weights(dir / "sharded"); });
  record["save_gathered"] = measure([&] {
    const io::NamedTensors whole = models::whole_values(model.weights(), &group);
    group.on_chief_then_barrier([&] { io::save_safetensors(gathered, whole); });
  });
  group.communicator().barrier();
  record["load_sharded"] = measure([&] { model.load_weights(dir / "sharded"); });
  record["load_gathered"] = measure([&] {
    const io::SafetensorsContents contents = io::load_safetensors(gathered);
    for (size_t i = 0; i < contents.tensors.size(); ++i) model.weights()[i].assign_whole(contents.tensors[i].second);
  });
  group.communicator().barrier();
  return record;
}

int parent(const fs::path& dir) {
  fs::create_directories(dir);
  const int port = 29500 + (::getpid() % 2000);
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    const std::vector<std::string> role_env = {"CHORUS_BENCH_ROLE=worker",
                                               "CHORUS_BENCH_OUT=" + (dir / std::to_string(r)).string(),
                                               "CHORUS_CPU_DEVICES=1", "OMP_NUM_THREADS=1"};
    pids.push_back(testing::spawn_self({"--dir", dir.string()},
                                       testing::worker_environment(r, 2, port, "checkpoint-bench", role_env), false));
  }
  for (pid_t pid : pids) {
    if (testing::wait_exit(pid, std::chrono::seconds(1800)) != 0) {
      throw std::runtime_error("checkpoint_bench: a worker failed");
    }
  }
  for (int r = 0; r < 2; ++r) {
    json record = json::parse(std::ifstream(dir / std::to_string(r)));
    const double bound = record.at("own_shard_bytes").get<double>() + record.at("largest_tensor_bytes").get<double>();
    record["bench"] = "checkpoint_shards";
    record["workers"] = 2;
    record["parameters"] = kLayers * kWidth * kWidth;
    // The peaks as a share of the target's allowance above the shards already held.
    for (const char* phase : {"save_sharded", "save_gathered", "load_sharded", "load_gathered"}) {
      record[phase]["peak_extra_over_largest_tensor"] =
          record[phase].at("peak_extra_bytes").get<double>() / record.at("largest_tensor_bytes").get<double>();
    }
    record["target_peak_bytes"] = bound;
    emit(record);
  }
  fs::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace chorus::bench

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("chorus_checkpoint_bench_" + std::to_string(::getpid()));
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--dir") dir = argv[i + 1];
  }
  if (std::getenv("CHORUS_BENCH_ROLE") == nullptr) return chorus::bench::parent(dir);
  const nlohmann::json record = chorus::bench::worker_role(dir);
  std::ofstream(std::getenv("CHORUS_BENCH_OUT")) << record.dump();
  return 0;
}
