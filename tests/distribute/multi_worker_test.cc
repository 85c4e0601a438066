// Multi-worker training between real processes on 127.0.0.1 (issue 6): 2 and 3 workers
// train the MLP and the two-tower model to the weights of one process with the same
// global batch, uneven and empty worker shares included; evaluate and predict are exact;
// a worker with another model, a worker killed mid-epoch, two jobs at once and a late
// starter. Workers are this test binary re-run with CHORUS_TEST_WORKER set: the
// environment below runs the scenario and exits before any test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "chorus/chorus.h"
#include "chorus/distribute/gradient_reducer.h"
#include "chorus/distribute/launcher.h"
#include "tests/distribute/two_tower_util.h"
#include "tests/models/model_test_util.h"
#include "tests/testing/free_port.h"
#include "tests/testing/temp_dir.h"

extern char** environ;

namespace chorus {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// The values of `variables`, in order.
json values_of(const std::vector<autograd::Variable>& variables) {
  json out = json::array();
  for (const auto& v : variables) out.push_back(v.value().to_vector<float>());
  return out;
}

// What a scenario leaves behind: final weights (and optimizer state when compiled),
// per-epoch history, and the number of workers the model trained with (1: one process).
json outcome(const models::Model& model, const models::History& history) {
  json out;
  out["weights"] = values_of(model.weights());
  if (model.compiled()) out["optimizer"] = values_of(model.optimizer().variables());
  for (const auto& [key, values] : history.history) out["history"][key] = values;
  const auto& distribution = model.distribution();
  out["world_size"] = distribution && distribution->workers() ? distribution->workers()->size() : 1;
  return out;
}

// The directory a scenario may write to: CHORUS_TEST_OUT, which the test sets for its
// one-process reference too.
std::string scratch_dir() {
  const char* out = std::getenv("CHORUS_TEST_OUT");
  if (out == nullptr) throw ValueError("multi_worker_test: this scenario needs CHORUS_TEST_OUT");
  return out;
}

// The small MLP, recording by optimizer step which rows of `x` (identified by their first
// feature) each of its training steps gets. Steps run on one replica thread at a time.
class RowRecordingMlp : public models::Model {
 public:
  RowRecordingMlp(const Tensor& inputs, const Tensor& outputs, const Tensor& x) : Model(inputs, outputs) {
    for (int64_t i = 0; i < x.dim(0); ++i) ids_[x.data<float>()[i * x.dim(1)]] = i;
    if (static_cast<int64_t>(ids_.size()) != x.dim(0)) throw ValueError("RowRecordingMlp: rows are not distinct");
  }
  models::Logs train_step(const Tree& batch) override {
    const Tensor x = batch[0].tensor();
    std::vector<int64_t>& rows = rows_by_step_[optimizer().iterations()];
    for (int64_t i = 0; i < x.dim(0); ++i) rows.push_back(ids_.at(x.data<float>()[i * x.dim(1)]));
    return Model::train_step(batch);
  }
  // {step: [row ids]} for the steps in which this worker had rows.
  json rows_by_step() const {
    json out = json::object();
    for (const auto& [step, rows] : rows_by_step_) out[std::to_string(step)] = rows;
    return out;
  }

 private:
  std::map<float, int64_t> ids_;
  std::map<int64_t, std::vector<int64_t>> rows_by_step_;
};

// RowRecordingMlp's layers, seeded as the "mlp" scenario's model.
std::unique_ptr<RowRecordingMlp> row_recording_mlp(const Tensor& x) {
  layers::set_random_seed(7);
  Tensor in = layers::Input({4});
  Tensor h = layers::Dense(8, {.activation = "relu"})(in);
  return std::make_unique<RowRecordingMlp>(in, layers::Dense(3)(h), x);
}

models::CompileOptions mlp_compile_options(Shared<optimizers::Optimizer> optimizer) {
  return {.optimizer = std::move(optimizer),
          .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
          .metrics = {"sparse_categorical_accuracy"}};
}

// The "shuffle_*" scenarios' data: 98 rows in batches of 16, 7 steps an epoch, 3 epochs;
// rank r reseeds its layer stream with kShuffleSeed + r before fit.
constexpr int64_t kShuffleRows = 98, kShuffleBatch = 16, kShuffleStepsPerEpoch = 7, kShuffleEpochs = 3;
constexpr uint64_t kShuffleSeed = 11;

// One process trains row_recording_mlp on the global batches `steps` (row ids of the
// "shuffle_*" scenarios' data, kShuffleStepsPerEpoch a pass) in order: the reference
// for a multi-worker run that took them.
json replay_in_one_process(const std::vector<std::vector<int64_t>>& steps) {
  const testing::Blobs train = testing::separable_blobs(kShuffleRows, 3);
  std::vector<Tree> batches;
  for (const auto& rows : steps) {
    const Tensor ids = from_values<int32_t>(std::vector<int32_t>(rows.begin(), rows.end()),
                                            Shape{static_cast<int64_t>(rows.size())});
    batches.push_back(Tree::list({ops::take(train.x, ids, 0), ops::take(train.y, ids, 0)}));
  }
  auto model = row_recording_mlp(train.x);
  model->compile(mlp_compile_options(optimizers::SGD({.learning_rate = 0.1})));
  const auto dataset = data::Dataset::from_generator([batches](int64_t epoch) {
    auto next = std::make_shared<size_t>(static_cast<size_t>(epoch * kShuffleStepsPerEpoch));
    const size_t end = std::min(batches.size(), *next + static_cast<size_t>(kShuffleStepsPerEpoch));
    return data::Dataset::Generator([batches, next, end]() -> std::optional<Tree> {
      if (*next >= end) return std::nullopt;
      return batches[(*next)++];
    });
  });
  models::History history = model->fit(dataset, {.epochs = kShuffleEpochs, .verbose = 0});
  return outcome(*model, history);
}

// A line of the FILE-sharding scenario's text files, "x0 x1 x2 x3 label", as (x, label).
Tree parse_example(const Tree& line) {
  std::istringstream in(line.tensor().string_at(0));
  std::vector<float> x(4);
  int label = 0;
  for (float& v : x) in >> v;
  in >> label;
  return Tree(Tree::List{Tree(from_values<float>(x, Shape{4})), Tree(from_values<int32_t>({label}, Shape{}))});
}

// The text files of the FILE-sharding scenario under $CHORUS_TEST_DATA, their lines
// parsed and batched by 16: four files of 20, 27, 34 and 41 lines, so two workers read
// 54 and 68 lines and the first runs out two steps before the second.
data::Dataset text_examples() {
  const std::string root = std::getenv("CHORUS_TEST_DATA");
  std::vector<std::string> files;
  for (int k = 0; k < 4; ++k) files.push_back(root + "/part-" + std::to_string(k) + ".txt");
  return data::text_line_dataset(files).map(parse_example).batch(16);
}

// One process's equivalent of text_examples() FILE-sharded over two workers: step k's
// batch is worker 0's k-th batch followed by worker 1's.
data::Dataset text_examples_as_two_workers_batch_them() {
  std::vector<Tree> batches;
  std::vector<data::Iterator> shards;
  for (int w = 0; w < 2; ++w) shards.push_back(data::shard_by_file(text_examples(), 2, w, nullptr)->iterator(0));
  for (;;) {
    std::vector<Tree> parts;
    for (auto& shard : shards) {
      if (auto batch = shard.next()) parts.push_back(*batch);
    }
    if (parts.empty()) break;
    Tree::List joined;
    for (size_t leaf = 0; leaf < 2; ++leaf) {
      std::vector<Tensor> rows;
      for (const Tree& part : parts) rows.push_back(part.list()[leaf].tensor());
      joined.emplace_back(ops::concatenate(rows, 0));
    }
    batches.emplace_back(std::move(joined));
  }
  return data::Dataset::from_generator([batches](int64_t) {
    auto next = std::make_shared<size_t>(0);
    return data::Dataset::Generator([batches, next]() -> std::optional<Tree> {
      if (*next == batches.size()) return std::nullopt;
      return batches[(*next)++];
    });
  });
}

// Runs a scenario: under MultiWorkerMirroredStrategy when `multi_worker`, else in this
// process alone (the reference). Scenarios: "mlp" (98 rows in batches of 16, so the last
// batch of 2 rows leaves a third worker empty), "mlp_wider" on rank 1 ("mismatch"),
// "die" (rank 1 kills itself in epoch 2), "two_tower", "two_tower_large".
json run_scenario(const std::string& scenario, bool multi_worker) {
  std::optional<distribute::MultiWorkerMirroredStrategy> strategy;
  if (multi_worker) strategy.emplace();
  const int rank = strategy ? strategy->cluster_resolver().rank : 0;
  auto compile = [&](models::Model& model, models::CompileOptions options) {
    std::optional<distribution::DistributionScope> scope;
    if (strategy) scope.emplace(strategy->scope());
    model.compile(std::move(options));
  };
  if (scenario == "two_tower" || scenario == "two_tower_large") {
    // Large: tables whose gradients the workers exchange as rows.
    const bool large = scenario == "two_tower_large";
    const int64_t users = large ? distribute::GradientReducer::kRowExchangeMinRows : 30;
    const int64_t movies = large ? users + 500 : 40;
    layers::set_random_seed(11);
    testing::TwoTower model(users, movies, large ? 2 : 8);
    compile(model, {.optimizer = optimizers::Adagrad(0.2)});
    models::History history =
        model.fit(testing::two_tower_ratings(250, users, movies).batch(64), {.epochs = 4, .verbose = 0});
    return outcome(model, history);
  }
  if (scenario == "save_fails") {
    // Rank 0 cannot write (the parent is a regular file): every rank must fail, at once.
    layers::set_random_seed(7);
    auto model = testing::small_mlp(4, 8);
    compile(*model, {.optimizer = optimizers::SGD({.learning_rate = 0.1}),
                     .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
    const std::string out = std::getenv("CHORUS_TEST_OUT");
    std::ofstream(out + "/not_a_dir") << "x";
    model->save_weights(out + "/not_a_dir/model.weights.safetensors");
    return json{};
  }
  if (scenario == "reinitialize") {
    // Joining the same job again is a no-op; another job is refused.
    const distribute::ClusterSpec cluster = strategy->cluster_resolver();
    distribution::initialize(cluster);
    distribute::ClusterSpec other = cluster;
    other.master_port += 1;
    try {
      distribution::initialize(other);
    } catch (const ValueError& e) {
      return json{{"error", e.what()}};
    }
    return json{{"error", ""}};
  }
  if (scenario == "file_shard") {
    layers::set_random_seed(5);
    auto model = testing::small_mlp(4, 8);
    compile(*model, {.optimizer = optimizers::SGD({.learning_rate = 0.1}),
                     .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                     .metrics = {"sparse_categorical_accuracy"}});
    const data::Dataset examples = multi_worker ? text_examples() : text_examples_as_two_workers_batch_them();
    models::History history = model->fit(examples, {.epochs = 3, .verbose = 0});
    json out = outcome(*model, history);
    for (const auto& [key, value] : model->evaluate(examples, {.verbose = 0})) out["evaluate"][key] = value;
    return out;
  }
  if (scenario == "batch_logs" || scenario == "nan") {
    // "batch_logs": only rank 0 reads batch logs, so every worker merges metrics after
    // each step. "nan": a NaN input row and no callback reading batch logs, so the workers
    // merge once an epoch and all fail at the end of the first.
    layers::set_random_seed(7);
    auto model = testing::small_mlp(4, 8);
    compile(*model, {.optimizer = optimizers::SGD({.learning_rate = 0.1}),
                     .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
    auto train = testing::separable_blobs(98, 3);
    if (scenario == "nan") train.x.data<float>()[4 * 50] = std::numeric_limits<float>::quiet_NaN();
    std::vector<double> batch_losses;
    std::vector<Shared<models::Callback>> reading;
    if (rank == 0 && scenario == "batch_logs") {
      reading.emplace_back(std::make_shared<callbacks::LambdaCallback>(callbacks::LambdaCallbackFunctions{
          .on_train_batch_end = [&](int64_t, const models::Logs& logs) { batch_losses.push_back(logs["loss"]); }}));
    }
    models::History history = model->fit(
        train.x, train.y, {.epochs = 2, .batch_size = 16, .verbose = 0, .callbacks = reading, .shuffle = false});
    json out = outcome(*model, history);
    out["batch_losses"] = batch_losses;
    return out;
  }
  if (scenario == "shuffle_arrays" || scenario == "shuffle_dataset") {
    // fit's default shuffle of arrays (seeded by the layers' stream), or an unseeded
    // Dataset::shuffle (seeded by the job's agreed stream): every worker must take its rows
    // of the same global batches. Each records the rows it trained on. After the model is
    // built the ranks' layer streams differ, as they may in a user's job, so fit's shuffle
    // must be rank 0's.
    const testing::Blobs train = testing::separable_blobs(kShuffleRows, 3);
    auto model = row_recording_mlp(train.x);
    layers::set_random_seed(kShuffleSeed + static_cast<uint64_t>(rank));
    compile(*model, mlp_compile_options(optimizers::SGD({.learning_rate = 0.1})));
    models::History history;
    if (scenario == "shuffle_arrays") {
      history = model->fit(train.x, train.y, {.epochs = kShuffleEpochs, .batch_size = kShuffleBatch, .verbose = 0});
    } else {
      const auto shuffled =
          data::Dataset::from_tensor_slices(Tree::list({train.x, train.y})).shuffle(kShuffleRows).batch(kShuffleBatch);
      history = model->fit(shuffled, {.epochs = kShuffleEpochs, .verbose = 0});
    }
    json out = outcome(*model, history);
    out["rows"] = model->rows_by_step();
    return out;
  }
  if (scenario == "seeded_by_rank") {
    // Every rank builds its model from another seed (the reference: rank 0's); rank 0's
    // weights must reach every worker before the first step.
    layers::set_random_seed(7 + static_cast<uint64_t>(rank));
    auto model = testing::small_mlp(4, 8);
    compile(*model, mlp_compile_options(optimizers::SGD({.learning_rate = 0.1})));
    const json initial = values_of(model->weights());
    auto train = testing::separable_blobs(98, 3);
    models::History history =
        model->fit(train.x, train.y, {.epochs = 3, .batch_size = 16, .verbose = 0, .shuffle = false});
    json out = outcome(*model, history);
    out["initial_weights"] = initial;
    return out;
  }
  const std::string world = std::to_string(strategy ? strategy->cluster_resolver().world_size : 1);
  if (scenario == "restored_by_rank") {
    // Every rank trains alone with Adam on its own data and seed, saves, then restores that
    // model under the strategy: weights and optimizer state differ by rank, and rank 0's
    // must reach every worker before the first step.
    layers::set_random_seed(7 + static_cast<uint64_t>(rank));
    auto alone = testing::small_mlp(4, 8);
    alone->compile(mlp_compile_options(optimizers::Adam(0.01)));
    auto own = testing::separable_blobs(64, 20 + static_cast<uint64_t>(rank));
    alone->fit(own.x, own.y, {.epochs = 1, .batch_size = 16, .verbose = 0, .shuffle = false});
    const std::string path = scratch_dir() + "/alone-of-" + world + "-rank" + std::to_string(rank);
    alone->save(path);
    std::unique_ptr<models::Model> model;
    {
      std::optional<distribution::DistributionScope> scope;
      if (strategy) scope.emplace(strategy->scope());
      model = models::load_model(path);
    }
    const json initial = values_of(model->weights()), initial_optimizer = values_of(model->optimizer().variables());
    auto train = testing::separable_blobs(98, 3);
    models::History history =
        model->fit(train.x, train.y, {.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false});
    json out = outcome(*model, history);
    out["initial_weights"] = initial;
    out["initial_optimizer"] = initial_optimizer;
    return out;
  }
  if (scenario == "save_restore") {
    // Two epochs with Adam, saved (rank 0 writes, the others wait), restored on every rank
    // and trained two more; the reference continues its model in memory.
    layers::set_random_seed(7);
    auto model = testing::small_mlp(4, 8);
    compile(*model, mlp_compile_options(optimizers::Adam(0.01)));
    auto train = testing::separable_blobs(98, 3);
    models::FitOptions first{.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false};
    model->fit(train.x, train.y, first);
    models::FitOptions rest = first;
    rest.epochs = 4;
    rest.initial_epoch = 2;
    if (!strategy) return outcome(*model, model->fit(train.x, train.y, rest));
    const std::string path = scratch_dir() + "/checkpoint-of-" + world;
    model->save(path);
    std::unique_ptr<models::Model> restored;
    {
      auto scope = strategy->scope();
      restored = models::load_model(path);
    }
    return outcome(*restored, restored->fit(train.x, train.y, rest));
  }
  layers::set_random_seed(7);
  auto model = testing::small_mlp(4, scenario == "mismatch" && rank == 1 ? 9 : 8);
  compile(*model, {.optimizer = optimizers::SGD({.learning_rate = 0.1}),
                   .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                   .metrics = {"sparse_categorical_accuracy"}});
  auto die = std::make_shared<callbacks::LambdaCallback>(callbacks::LambdaCallbackFunctions{
      .on_train_batch_begin = [&](int64_t batch, const models::Logs&) {
        if (scenario == "die" && rank == 1 && batch == 3) ::raise(SIGKILL);
      }});
  auto train = testing::separable_blobs(98, 3), test = testing::separable_blobs(41, 9);
  models::History history = model->fit(
      train.x, train.y, {.epochs = 3, .batch_size = 16, .verbose = 0, .callbacks = {die}, .shuffle = false});
  json out = outcome(*model, history);
  for (const auto& [key, value] : model->evaluate(test.x, test.y, {.batch_size = 10, .verbose = 0})) {
    out["evaluate"][key] = value;
  }
  out["predict"] = model->predict(test.x, {.batch_size = 10}).tensor().to_vector<float>();
  return out;
}

// The worker side: CHORUS_TEST_WORKER names the scenario, CHORUS_TEST_OUT the directory
// for rank<r>.json (or rank<r>.error with the exception's message).
class WorkerEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* scenario = std::getenv("CHORUS_TEST_WORKER");
    if (scenario == nullptr) return;
    const std::string out = std::getenv("CHORUS_TEST_OUT"), rank = std::getenv("RANK");
    int code = 0;
    try {
      std::ofstream(out + "/rank" + rank + ".json") << run_scenario(scenario, true).dump();
    } catch (const std::exception& e) {
      std::ofstream(out + "/rank" + rank + ".error") << e.what();
      code = 1;
    }
    std::fflush(nullptr);
    std::_Exit(code);
  }
};
[[maybe_unused]] ::testing::Environment* const worker_environment =
    ::testing::AddGlobalTestEnvironment(new WorkerEnvironment);

class MultiWorkerTest : public testing::TempDirTest {
 protected:
  // The environment of worker `rank` of a `world`-worker job on 127.0.0.1:port.
  // Results go to `out` (default: dir()).
  std::vector<std::string> worker_env(const std::string& scenario, int rank, int world, int port,
                                      const std::string& job, int devices = 1, const std::string& out = "") const {
    std::vector<std::string> env = {"CHORUS_TEST_WORKER=" + scenario, "CHORUS_TEST_OUT=" + (out.empty() ? dir() : out),
                                    "RANK=" + std::to_string(rank), "WORLD_SIZE=" + std::to_string(world),
                                    "LOCAL_RANK=" + std::to_string(rank), "LOCAL_WORLD_SIZE=" + std::to_string(world),
                                    "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port),
                                    "CHORUS_JOB_ID=" + job, "CHORUS_CPU_DEVICES=" + std::to_string(devices),
                                    "OMP_NUM_THREADS=1", "CHORUS_COLLECTIVE_TIMEOUT=5"};
    // The rest of this process's environment, less what is set above.
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e, key = kv.substr(0, kv.find('=') + 1);
      if (std::none_of(env.begin(), env.end(), [&](const std::string& s) { return s.starts_with(key); })) {
        env.push_back(kv);
      }
    }
    return env;
  }

  // Starts this binary as a worker; returns its pid.
  static pid_t spawn(const std::vector<std::string>& env) {
    std::vector<std::string> args = {"/proc/self/exe", "--gtest_filter=MultiWorkerTest.*"};
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (const auto& kv : env) envp.push_back(const_cast<char*>(kv.c_str()));
    envp.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      // The worker's own gtest banner and logs go to /dev/null; results go to files.
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, STDOUT_FILENO);
      ::execve(argv[0], argv.data(), envp.data());
      std::_Exit(127);
    }
    return pid;
  }

  // Waits for `pid` at most `limit`; kills it and returns -1 if it is still running.
  static int wait_exit(pid_t pid, std::chrono::seconds limit = std::chrono::seconds(120)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > until) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // Runs a whole job and returns each rank's exit code.
  std::vector<int> run_job(const std::string& scenario, int world, int devices = 1) {
    const int port = testing::free_port();
    std::vector<pid_t> pids;
    for (int r = 0; r < world; ++r) pids.push_back(spawn(worker_env(scenario, r, world, port, scenario, devices)));
    std::vector<int> codes;
    for (pid_t pid : pids) codes.push_back(wait_exit(pid));
    return codes;
  }

  json result(int rank) const {
    std::ifstream in(dir_ / ("rank" + std::to_string(rank) + ".json"));
    if (!in) return json();
    return json::parse(in);
  }
  std::string error(int rank) const {
    std::ifstream in(dir_ / ("rank" + std::to_string(rank) + ".error"));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // The largest relative difference between two lists of variables' values (JSON), or
  // +inf (and a failure) when their numbers or sizes differ.
  static double worst_relative_difference(const json& want_list, const json& have_list, const std::string& what) {
    if (have_list.size() != want_list.size() || want_list.empty()) {
      ADD_FAILURE() << what << ": " << have_list.size() << " variables, the reference has " << want_list.size();
      return std::numeric_limits<double>::infinity();
    }
    double worst = 0;
    for (size_t k = 0; k < want_list.size(); ++k) {
      const auto want = want_list[k].get<std::vector<float>>();
      const auto have = have_list[k].get<std::vector<float>>();
      if (have.size() != want.size()) {
        ADD_FAILURE() << what << " " << k << ": " << have.size() << " values, the reference has " << want.size();
        return std::numeric_limits<double>::infinity();
      }
      for (size_t i = 0; i < want.size(); ++i) {
        worst = std::max(worst, std::abs(double{have[i]} - want[i]) /
                                    std::max({std::abs(double{have[i]}), std::abs(double{want[i]}), 1e-3}));
      }
    }
    return worst;
  }

  // Every rank ran in a job of `world` workers, and its weights (and optimizer state) equal
  // the reference's (<= 1e-5 relative) and each other's bits; the reported metrics are the
  // global batch's.
  void expect_matches(const json& reference, int world) {
    for (int r = 0; r < world; ++r) {
      SCOPED_TRACE("rank " + std::to_string(r) + ": " + error(r));
      const json got = result(r);
      ASSERT_TRUE(got.contains("weights"));
      EXPECT_EQ(got.value("world_size", 0), world);
      // Measured worst: 7.5e-6, in the -O3 and the sanitizer build alike: a weight of
      // 5.3e-4 that differs by 7.5e-9, rounding in a sum that cancels to near zero.
      EXPECT_LE(worst_relative_difference(reference["weights"], got["weights"], "weights"), 1e-5);
      EXPECT_EQ(got["weights"], result(0)["weights"]) << "ranks differ";
      if (reference.contains("optimizer")) {
        EXPECT_LE(worst_relative_difference(reference["optimizer"], got.value("optimizer", json::array()), "optimizer"),
                  1e-5);
        EXPECT_EQ(got.value("optimizer", json()), result(0).value("optimizer", json())) << "ranks differ";
      }
      ASSERT_EQ(got.value("history", json::object()).size(), reference["history"].size());
      for (const auto& [key, values] : reference["history"].items()) {
        ASSERT_TRUE(got["history"].contains(key)) << key;
        ASSERT_EQ(got["history"][key].size(), values.size()) << key;
        for (size_t e = 0; e < values.size(); ++e) {
          EXPECT_NEAR(got["history"][key][e].get<double>(), values[e].get<double>(), 1e-6) << key << " epoch " << e;
        }
      }
      if (reference.contains("evaluate")) {
        ASSERT_EQ(got.value("evaluate", json::object()).size(), reference["evaluate"].size());
        for (const auto& [key, value] : reference["evaluate"].items()) {
          EXPECT_NEAR(got["evaluate"].at(key).get<double>(), value.get<double>(), 1e-6) << key;
        }
      }
      if (reference.contains("predict")) {
        const auto want = reference["predict"].get<std::vector<float>>();
        const auto have = got.value("predict", json::array()).get<std::vector<float>>();
        ASSERT_EQ(have.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(have[i], want[i], 1e-4) << i;
      }
    }
  }

  // Runs `scenario` in one process, then as jobs of 2 and 3 workers that must all exit 0
  // and end with the one process's results; then runs `also(reference, world)`.
  void expect_two_and_three_workers_match_one_process(
      const std::string& scenario, const std::function<void(const json&, int)>& also = nullptr) {
    ::setenv("CHORUS_TEST_OUT", dir().c_str(), 1);  // the workers get theirs from worker_env
    const json reference = run_scenario(scenario, false);
    ::unsetenv("CHORUS_TEST_OUT");
    ASSERT_EQ(reference.value("world_size", 0), 1);
    for (int world : {2, 3}) {
      SCOPED_TRACE(world);
      EXPECT_EQ(run_job(scenario, world), std::vector<int>(static_cast<size_t>(world), 0));
      expect_matches(reference, world);
      if (also) also(reference, world);
    }
  }

  // Runs a "shuffle_*" scenario as jobs of 2 and 3 workers. Each step's global batch (the
  // ranks' rows in rank order) must take every row once an epoch, in an order that changes
  // from epoch to epoch; one process trained on those batches must end where the workers do.
  void expect_shuffles_agree_and_match_one_process(const std::string& scenario) {
    for (int world : {2, 3}) {
      SCOPED_TRACE(world);
      EXPECT_EQ(run_job(scenario, world), std::vector<int>(static_cast<size_t>(world), 0));
      std::vector<std::vector<int64_t>> steps(static_cast<size_t>(kShuffleEpochs * kShuffleStepsPerEpoch));
      for (int r = 0; r < world; ++r) {
        const json got = result(r);  // alive while its items are read
        ASSERT_TRUE(got.contains("rows")) << "rank " << r << ": " << error(r);
        for (const auto& [step, rows] : got["rows"].items()) {
          const size_t k = std::stoul(step);
          ASSERT_LT(k, steps.size()) << "rank " << r;
          for (const auto& row : rows) steps[k].push_back(row.get<int64_t>());
        }
      }
      std::vector<int64_t> every_row(kShuffleRows), previous;
      std::iota(every_row.begin(), every_row.end(), 0);
      for (int64_t epoch = 0; epoch < kShuffleEpochs; ++epoch) {
        std::vector<int64_t> order;
        for (int64_t k = 0; k < kShuffleStepsPerEpoch; ++k) {
          const auto& rows = steps[static_cast<size_t>(epoch * kShuffleStepsPerEpoch + k)];
          EXPECT_EQ(static_cast<int64_t>(rows.size()), k + 1 < kShuffleStepsPerEpoch ? kShuffleBatch : 2)
              << "epoch " << epoch << " step " << k;
          order.insert(order.end(), rows.begin(), rows.end());
        }
        EXPECT_NE(order, every_row) << "epoch " << epoch << " was not shuffled";
        EXPECT_NE(order, previous) << "epoch " << epoch << " repeats the order of the one before";
        previous = order;
        std::sort(order.begin(), order.end());
        EXPECT_EQ(order, every_row) << "epoch " << epoch << ": the workers' rows are not each row once";
      }
      expect_matches(replay_in_one_process(steps), world);
    }
  }
};

TEST_F(MultiWorkerTest, MlpOnTwoAndThreeWorkersMatchesOneProcess) {
  expect_two_and_three_workers_match_one_process("mlp");
}

TEST_F(MultiWorkerTest, DifferentlySeededRanksAllTrainRank0sInitialWeights) {
  expect_two_and_three_workers_match_one_process("seeded_by_rank", [&](const json&, int world) {
    for (int r = 1; r < world; ++r) {
      EXPECT_NE(result(r).value("initial_weights", json()), result(0).value("initial_weights", json())) << r;
    }
  });
}

TEST_F(MultiWorkerTest, RanksRestoredFromTheirOwnCheckpointsAllTrainRank0sWeightsAndOptimizerState) {
  expect_two_and_three_workers_match_one_process("restored_by_rank", [&](const json&, int world) {
    for (int r = 1; r < world; ++r) {
      EXPECT_NE(result(r).value("initial_weights", json()), result(0).value("initial_weights", json())) << r;
      EXPECT_NE(result(r).value("initial_optimizer", json()), result(0).value("initial_optimizer", json())) << r;
    }
  });
}

TEST_F(MultiWorkerTest, SavedOnRank0AndRestoredOnEveryRankTrainsOnAsOneProcessDoes) {
  expect_two_and_three_workers_match_one_process("save_restore", [&](const json& reference, int) {
    EXPECT_EQ(reference["history"]["loss"].size(), 2u);  // the two epochs after the restore
  });
}

TEST_F(MultiWorkerTest, FitsDefaultShuffleGivesEveryWorkerTheSameGlobalBatches) {
  expect_shuffles_agree_and_match_one_process("shuffle_arrays");
}

TEST_F(MultiWorkerTest, AnUnseededDatasetShuffleGivesEveryWorkerTheSameGlobalBatches) {
  expect_shuffles_agree_and_match_one_process("shuffle_dataset");
}

TEST_F(MultiWorkerTest, BatchLogsReadOnOneRankAreTheGlobalBatchsOnEveryStep) {
  // Without a callback reading them the workers merge metrics once an epoch (two_tower,
  // file_shard); here rank 0 reads them, so both ranks must merge after every step.
  const json reference = run_scenario("batch_logs", false);
  EXPECT_EQ(run_job("batch_logs", 2), (std::vector<int>{0, 0}));
  expect_matches(reference, 2);
  ASSERT_TRUE(result(0).contains("batch_losses")) << error(0);
  const auto want = reference["batch_losses"].get<std::vector<double>>();
  const auto have = result(0)["batch_losses"].get<std::vector<double>>();
  ASSERT_EQ(have.size(), 14u);  // 2 epochs of ceil(98 / 16) steps
  ASSERT_EQ(have.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(have[i], want[i], 1e-6) << "batch " << i;
  EXPECT_TRUE(result(1)["batch_losses"].empty());
}

TEST_F(MultiWorkerTest, ANonFiniteLossFailsEveryRankAtTheSameEpochEnd) {
  EXPECT_EQ(run_job("nan", 2), (std::vector<int>{1, 1}));
  for (int r = 0; r < 2; ++r) EXPECT_THAT(error(r), HasSubstr("nan during epoch 1; add callbacks::TerminateOnNaN")) << r;
}

TEST_F(MultiWorkerTest, FileShardingReadsEachWorkersFilesAndMatchesOneProcess) {
  // Uneven files: worker 0 runs out two steps early and joins the rest with empty batches.
  const std::filesystem::path data = dir_ / "data";
  std::filesystem::create_directories(data);
  Generator gen(3);
  for (int k = 0; k < 4; ++k) {
    std::ofstream out(data / ("part-" + std::to_string(k) + ".txt"));
    const Tensor x = uniform(Shape{20 + 7 * k, 4}, gen, -1, 1);
    for (int64_t i = 0; i < x.dim(0); ++i) {
      const float* row = x.data<float>() + 4 * i;
      out << fmt::format("{} {} {} {} {}\n", row[0], row[1], row[2], row[3], row[0] + row[1] > 0 ? 1 : 0);
    }
  }
  ::setenv("CHORUS_TEST_DATA", data.c_str(), 1);
  const json reference = run_scenario("file_shard", false);
  EXPECT_EQ(run_job("file_shard", 2), std::vector<int>(2, 0));
  ::unsetenv("CHORUS_TEST_DATA");
  expect_matches(reference, 2);
  EXPECT_EQ(reference["history"]["loss"].size(), 3u);
}

TEST_F(MultiWorkerTest, FileShardingWithAWorkerWithoutLinesFailsEveryRank) {
  const std::filesystem::path data = dir_ / "data";
  std::filesystem::create_directories(data);
  for (int k = 0; k < 4; ++k) {
    std::ofstream out(data / ("part-" + std::to_string(k) + ".txt"));
    if (k % 2 == 0) out << "0.5 0.5 0.5 0.5 1\n-0.5 -0.5 -0.5 -0.5 0\n";  // worker 1's files stay empty
  }
  ::setenv("CHORUS_TEST_DATA", data.c_str(), 1);
  const std::vector<int> codes = run_job("file_shard", 2);
  ::unsetenv("CHORUS_TEST_DATA");
  EXPECT_EQ(codes, std::vector<int>(2, 1));
  EXPECT_THAT(error(1), HasSubstr("FILE sharding: worker 1 of 2 has no batch in its files"));
  // Rank 1 failed before its first step: rank 0 names it once the deadline passes.
  EXPECT_THAT(error(0), HasSubstr("start-up check of the model on rank 0 of 2 failed"));
  EXPECT_THAT(error(0), HasSubstr("ranks that never arrived: 1"));
}

TEST_F(MultiWorkerTest, AFailedCheckpointWriteFailsEveryRankAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(run_job("save_fails", 2), std::vector<int>(2, 1));
  EXPECT_THAT(error(0), HasSubstr("not_a_dir"));
  EXPECT_THAT(error(1), HasSubstr("rank 0 failed to write the checkpoint"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));  // the deadline is 5 s
}

TEST_F(MultiWorkerTest, InitializeTwiceJoinsOneJobOnly) {
  EXPECT_EQ(run_job("reinitialize", 2), std::vector<int>(2, 0));
  for (int r = 0; r < 2; ++r) {
    const std::string message = result(r).value("error", "");
    EXPECT_THAT(message, HasSubstr("distribution.initialize: this process already joined")) << error(r);
    EXPECT_THAT(message, HasSubstr("cannot join")) << r;
  }
}

TEST_F(MultiWorkerTest, TwoWorkersOfTwoReplicasEachMatchOneProcess) {
  // Hierarchical: each worker reduces its two replicas in-process, then across workers.
  const json reference = run_scenario("mlp", false);
  EXPECT_EQ(run_job("mlp", 2, /*devices=*/2), std::vector<int>(2, 0));
  expect_matches(reference, 2);
}

TEST_F(MultiWorkerTest, KernelRowBlocksStreamedFromBackwardMatchOneProcess) {
  // 64-byte buckets cut both kernels (4x8 and 8x3) into row blocks that their matmul
  // backward hands over one by one, reduced locally and then across workers.
  const json reference = run_scenario("mlp", false);
  ::setenv("CHORUS_GRADIENT_BUCKET_BYTES", "64", 1);
  const std::vector<int> codes = run_job("mlp", 2, /*devices=*/2);
  ::unsetenv("CHORUS_GRADIENT_BUCKET_BYTES");
  EXPECT_EQ(codes, std::vector<int>(2, 0));
  expect_matches(reference, 2);
}

TEST_F(MultiWorkerTest, TwoTowerOnTwoAndThreeWorkersMatchesOneProcess) {
  expect_two_and_three_workers_match_one_process("two_tower");
}

TEST_F(MultiWorkerTest, LargeTablesExchangedAsRowsOnTwoAndThreeWorkersMatchOneProcess) {
  expect_two_and_three_workers_match_one_process("two_tower_large");
}

TEST_F(MultiWorkerTest, LaunchRunsAJob) {
  // The same job through `chorus launch`'s machinery: environment, ranks, exit code.
  const json reference = run_scenario("mlp", false);
  ::setenv("CHORUS_TEST_WORKER", "mlp", 1);
  ::setenv("CHORUS_TEST_OUT", dir().c_str(), 1);
  ::setenv("CHORUS_CPU_DEVICES", "1", 1);
  const int code = distribute::launch(
      {.nproc_per_node = 2, .command = {"/proc/self/exe", "--gtest_filter=MultiWorkerTest.*"}});
  for (const char* name : {"CHORUS_TEST_WORKER", "CHORUS_TEST_OUT", "CHORUS_CPU_DEVICES"}) ::unsetenv(name);
  EXPECT_EQ(code, 0);
  expect_matches(reference, 2);
}

TEST_F(MultiWorkerTest, AWorkerWithAnotherModelFailsOnEveryRank) {
  EXPECT_EQ(run_job("mismatch", 2), std::vector<int>(2, 1));
  for (int r = 0; r < 2; ++r) {
    EXPECT_THAT(error(r), HasSubstr("the workers disagree on the model")) << r;
    EXPECT_THAT(error(r), HasSubstr("dense")) << r;  // the first difference: the hidden layer's shape
  }
}

TEST_F(MultiWorkerTest, AKilledWorkerFailsTheOthersWithinTheDeadlineNamingIt) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> codes = run_job("die", 3);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(codes[1], 128 + SIGKILL);
  for (int r : {0, 2}) {
    EXPECT_EQ(codes[static_cast<size_t>(r)], 1) << r;
    EXPECT_THAT(error(r), HasSubstr("ranks that never arrived: 1")) << r;
    EXPECT_THAT(error(r), HasSubstr("#")) << r;  // the operation's sequence number
  }
  EXPECT_LT(seconds, 60);  // the deadline is 5 s; start-up and training take a few more
}

TEST_F(MultiWorkerTest, TwoJobsOnOneHostDoNotInterfere) {
  const json reference = run_scenario("mlp", false);
  const int port_a = testing::free_port(), port_b = testing::free_port();
  std::vector<pid_t> pids;
  // Job b writes to a subdirectory so the two jobs' rank files stay apart.
  std::filesystem::create_directories(dir_ / "b");
  for (int r = 0; r < 2; ++r) {
    pids.push_back(spawn(worker_env("mlp", r, 2, port_a, "job-a")));
    pids.push_back(spawn(worker_env("mlp", r, 2, port_b, "job-b", 1, (dir_ / "b").string())));
  }
  for (pid_t pid : pids) EXPECT_EQ(wait_exit(pid), 0);
  expect_matches(reference, 2);
  const std::filesystem::path a = dir_;
  dir_ = dir_ / "b";
  expect_matches(reference, 2);
  dir_ = a;
}

TEST_F(MultiWorkerTest, WorkersThatStartLateStillJoin) {
  // Rank 1 starts before rank 0's store exists (it retries connecting); rank 0 comes 2 s late.
  const json reference = run_scenario("mlp", false);
  const int port = testing::free_port();
  const pid_t first = spawn(worker_env("mlp", 1, 2, port, "late"));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const pid_t late = spawn(worker_env("mlp", 0, 2, port, "late"));
  EXPECT_EQ(wait_exit(first), 0);
  EXPECT_EQ(wait_exit(late), 0);
  expect_matches(reference, 2);
}

}  // namespace
}  // namespace chorus
