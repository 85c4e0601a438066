// Multi-worker training between real processes on 127.0.0.1 (issue 6) ends where one
// process with the same global batch does: 2 and 3 workers train the MLP and the
// two-tower model, uneven and empty worker shares, FILE sharding, hierarchical and
// streamed reduction included; evaluate and predict are exact; jobs started by `launch`,
// two jobs at once, a late starter; and a job fails on every rank, within the deadline,
// when a worker has another model, dies, or has no data, or the loss is not finite.
// The harness is tests/distribute/multi_worker_harness.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "chorus/chorus.h"
#include "chorus/cluster/launcher.h"
#include "chorus/replicas/gradient_reducer.h"
#include "tests/distribute/multi_worker_harness.h"
#include "tests/distribute/two_tower_util.h"
#include "tests/models/model_test_util.h"
#include "tests/testing/free_port.h"
#include "tests/testing/test_names.h"

namespace chorus::testing {
namespace {

using namespace testing::test_names;
using nlohmann::json;

// "mlp": 98 rows in batches of 16, so the last batch of 2 rows leaves a third worker
// empty; the result adds evaluate's metrics and predict's outputs. "mlp_jit" compiles its
// steps (jit_compile). The other variants fail:
// "mismatch" (rank 1's hidden layer is wider) and "die" (rank 1 kills itself at its
// fourth step), "stall_rank0"/"stall_rank1" (that rank stops itself, alive but silent,
// at its fourth step). The callback's batch hook makes the workers merge metrics every
// step.
json fit_mlp_scenario(ScenarioRun& run, const std::string& variant) {
  layers::set_random_seed(7);
  auto model = testing::small_mlp(4, variant == "mismatch" && run.rank() == 1 ? 9 : 8);
  models::CompileOptions options = testing::mlp_compile_options(optimizers::SGD({.learning_rate = 0.1}));
  options.jit_compile = variant == "mlp_jit";
  run.compile(*model, options);
  auto die = std::make_shared<callbacks::LambdaCallback>(callbacks::LambdaCallbackFunctions{
      .on_train_batch_begin = [&](int64_t batch, const models::Logs&) {
        if (variant == "die" && run.rank() == 1 && batch == 3) ::raise(SIGKILL);
        if (variant == "stall_rank" + std::to_string(run.rank()) && batch == 3) ::raise(SIGSTOP);
      }});
  auto train = testing::separable_blobs(98, 3), test = testing::separable_blobs(41, 9);
  models::History history = model->fit(
      train.x, train.y, {.epochs = 3, .batch_size = 16, .verbose = 0, .callbacks = {die}, .shuffle = false});
  json out = testing::outcome(*model, history);
  for (const auto& [key, value] : model->evaluate(test.x, test.y, {.batch_size = 10, .verbose = 0})) {
    out["evaluate"][key] = value;
  }
  out["predict"] = model->predict(test.x, {.batch_size = 10}).tensor().to_vector<float>();
  return out;
}

// "two_tower", or with `large` tables whose gradients the workers exchange as rows.
json fit_two_tower_scenario(ScenarioRun& run, bool large) {
  const int64_t users = large ? replicas::GradientReducer::kRowExchangeMinRows : 30;
  const int64_t movies = large ? users + 500 : 40;
  layers::set_random_seed(11);
  testing::TwoTower model(users, movies, large ? 2 : 8);
  run.compile(model, {.optimizer = optimizers::Adagrad(0.2)});
  models::History history =
      model.fit(testing::two_tower_ratings(250, users, movies).batch(64), {.epochs = 4, .verbose = 0});
  return testing::outcome(model, history);
}

// A line of the FILE-sharding scenario's text files, "x0 x1 x2 x3 label", as (x, label).
Tree fit_parse_example(const Tree& line) {
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
data::Dataset fit_text_examples() {
  const std::string root = std::getenv("CHORUS_TEST_DATA");
  std::vector<std::string> files;
  for (int k = 0; k < 4; ++k) files.push_back(root + "/part-" + std::to_string(k) + ".txt");
  return data::text_line_dataset(files).map(fit_parse_example).batch(16);
}

// One process's equivalent of fit_text_examples() FILE-sharded over two workers: step
// k's batch is worker 0's k-th batch followed by worker 1's.
data::Dataset fit_text_examples_as_two_workers_batch_them() {
  std::vector<Tree> batches;
  std::vector<data::Iterator> shards;
  for (int w = 0; w < 2; ++w) shards.push_back(data::shard_by_file(fit_text_examples(), 2, w, nullptr)->iterator(0));
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

// "file_shard": each worker reads its files (AUTO sharding picks FILE); the reference
// trains on the batches the workers' shards make together.
json fit_file_shard_scenario(ScenarioRun& run) {
  layers::set_random_seed(5);
  auto model = testing::small_mlp(4, 8);
  run.compile(*model, testing::mlp_compile_options(optimizers::SGD({.learning_rate = 0.1})));
  const data::Dataset examples =
      run.multi_worker() ? fit_text_examples() : fit_text_examples_as_two_workers_batch_them();
  models::History history = model->fit(examples, {.epochs = 3, .verbose = 0});
  json out = testing::outcome(*model, history);
  for (const auto& [key, value] : model->evaluate(examples, {.verbose = 0})) out["evaluate"][key] = value;
  return out;
}

// "batch_logs": only rank 0 reads batch logs, so every worker merges metrics after each
// step; the result adds the batch losses rank 0 read. "nan": a NaN input row and no
// callback reading batch logs, so the workers merge once an epoch and all fail at the
// end of the first.
json fit_batch_logs_scenario(ScenarioRun& run, bool nan) {
  layers::set_random_seed(7);
  auto model = testing::small_mlp(4, 8);
  run.compile(*model, {.optimizer = optimizers::SGD({.learning_rate = 0.1}),
                       .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  auto train = testing::separable_blobs(98, 3);
  if (nan) train.x.data<float>()[4 * 50] = std::numeric_limits<float>::quiet_NaN();
  std::vector<double> batch_losses;
  std::vector<Shared<models::Callback>> reading;
  if (run.rank() == 0 && !nan) {
    reading.emplace_back(std::make_shared<callbacks::LambdaCallback>(callbacks::LambdaCallbackFunctions{
        .on_train_batch_end = [&](int64_t, const models::Logs& logs) { batch_losses.push_back(logs["loss"]); }}));
  }
  models::History history = model->fit(
      train.x, train.y, {.epochs = 2, .batch_size = 16, .verbose = 0, .callbacks = reading, .shuffle = false});
  json out = testing::outcome(*model, history);
  out["batch_losses"] = batch_losses;
  return out;
}

[[maybe_unused]] const bool kFitScenariosRegistered = testing::register_scenarios({
    {"mlp", [](ScenarioRun& run) { return fit_mlp_scenario(run, "mlp"); }},
    {"mlp_jit", [](ScenarioRun& run) { return fit_mlp_scenario(run, "mlp_jit"); }},
    {"mismatch", [](ScenarioRun& run) { return fit_mlp_scenario(run, "mismatch"); }},
    {"die", [](ScenarioRun& run) { return fit_mlp_scenario(run, "die"); }},
    {"stall_rank0", [](ScenarioRun& run) { return fit_mlp_scenario(run, "stall_rank0"); }},
    {"stall_rank1", [](ScenarioRun& run) { return fit_mlp_scenario(run, "stall_rank1"); }},
    {"two_tower", [](ScenarioRun& run) { return fit_two_tower_scenario(run, false); }},
    {"two_tower_large", [](ScenarioRun& run) { return fit_two_tower_scenario(run, true); }},
    {"file_shard", fit_file_shard_scenario},
    {"batch_logs", [](ScenarioRun& run) { return fit_batch_logs_scenario(run, false); }},
    {"nan", [](ScenarioRun& run) { return fit_batch_logs_scenario(run, true); }},
});

// Writes the FILE-sharding scenario's four files into `dir`: part-k holds 20 + 7k lines
// of 4 uniform features in [-1, 1) and the label x0 + x1 > 0.
void fit_write_text_files(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  Generator gen(3);
  for (int k = 0; k < 4; ++k) {
    std::ofstream out(dir / ("part-" + std::to_string(k) + ".txt"));
    const Tensor x = uniform(Shape{20 + 7 * k, 4}, gen, -1, 1);
    for (int64_t i = 0; i < x.dim(0); ++i) {
      const float* row = x.data<float>() + 4 * i;
      out << fmt::format("{} {} {} {} {}\n", row[0], row[1], row[2], row[3], row[0] + row[1] > 0 ? 1 : 0);
    }
  }
}

TEST_F(MultiWorkerTest, MlpOnTwoAndThreeWorkersMatchesOneProcess) {
  expect_two_and_three_workers_match_one_process("mlp");
}

TEST_F(MultiWorkerTest, TwoTowerOnTwoAndThreeWorkersMatchesOneProcess) {
  expect_two_and_three_workers_match_one_process("two_tower");
}

TEST_F(MultiWorkerTest, LargeTablesExchangedAsRowsOnTwoAndThreeWorkersMatchOneProcess) {
  expect_two_and_three_workers_match_one_process("two_tower_large");
}

TEST_F(MultiWorkerTest, BatchLogsReadOnOneRankAreTheGlobalBatchsOnEveryStep) {
  // Without a callback reading them the workers merge metrics once an epoch (two_tower,
  // file_shard); here rank 0 reads them, so both ranks must merge after every step.
  const json reference = run_alone("batch_logs");
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

TEST_F(MultiWorkerTest, FileShardingReadsEachWorkersFilesAndMatchesOneProcess) {
  // Uneven files: worker 0 runs out two steps early and joins the rest with empty batches.
  fit_write_text_files(dir_ / "data");
  ::setenv("CHORUS_TEST_DATA", (dir_ / "data").c_str(), 1);
  const json reference = run_alone("file_shard");
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

TEST_F(MultiWorkerTest, TwoWorkersOfTwoReplicasEachMatchOneProcess) {
  // Hierarchical: each worker reduces its two replicas in-process, then across workers.
  const json reference = run_alone("mlp");
  EXPECT_EQ(run_job("mlp", 2, /*devices=*/2), std::vector<int>(2, 0));
  expect_matches(reference, 2);
}

TEST_F(MultiWorkerTest, CompiledStepsOfTwoWorkersOfTwoReplicasEachMatchOneProcess) {
  // jit_compile: each replica's compiled step packs and launches its buckets from nodes of
  // its graph; worker 1 has no rows in the last batch of each epoch.
  const json reference = run_alone("mlp");
  EXPECT_EQ(run_job("mlp_jit", 2, /*devices=*/2), std::vector<int>(2, 0));
  expect_matches(reference, 2);
}

TEST_F(MultiWorkerTest, KernelRowBlocksStreamedFromBackwardMatchOneProcess) {
  // 64-byte buckets cut both kernels (4x8 and 8x3) into row blocks that their matmul
  // backward hands over one by one, reduced locally and then across workers.
  const json reference = run_alone("mlp");
  ::setenv("CHORUS_GRADIENT_BUCKET_BYTES", "64", 1);
  const std::vector<int> codes = run_job("mlp", 2, /*devices=*/2);
  ::unsetenv("CHORUS_GRADIENT_BUCKET_BYTES");
  EXPECT_EQ(codes, std::vector<int>(2, 0));
  expect_matches(reference, 2);
}

TEST_F(MultiWorkerTest, LaunchRunsAJob) {
  // The same job through `chorus launch`'s machinery: environment, ranks, exit code.
  const json reference = run_alone("mlp");
  ::setenv("CHORUS_TEST_WORKER", "mlp", 1);
  ::setenv("CHORUS_TEST_OUT", dir().c_str(), 1);
  ::setenv("CHORUS_CPU_DEVICES", "1", 1);
  const int code = cluster::launch(
      {.nproc_per_node = 2, .command = {"/proc/self/exe", "--gtest_filter=MultiWorkerTest.*"}});
  for (const char* name : {"CHORUS_TEST_WORKER", "CHORUS_TEST_OUT", "CHORUS_CPU_DEVICES"}) ::unsetenv(name);
  EXPECT_EQ(code, 0);
  expect_matches(reference, 2);
}

TEST_F(MultiWorkerTest, TwoJobsOnOneHostDoNotInterfere) {
  const json reference = run_alone("mlp");
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
  const json reference = run_alone("mlp");
  const int port = testing::free_port();
  const pid_t first = spawn(worker_env("mlp", 1, 2, port, "late"));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const pid_t late = spawn(worker_env("mlp", 0, 2, port, "late"));
  EXPECT_EQ(wait_exit(first), 0);
  EXPECT_EQ(wait_exit(late), 0);
  expect_matches(reference, 2);
}

TEST_F(MultiWorkerTest, ANonFiniteLossFailsEveryRankAtTheSameEpochEnd) {
  EXPECT_EQ(run_job("nan", 2), (std::vector<int>{1, 1}));
  for (int r = 0; r < 2; ++r) {
    EXPECT_THAT(error(r), HasSubstr("nan during epoch 1; add callbacks::TerminateOnNaN")) << r;
  }
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

// When `pid` has stopped (state T in /proc), or after a minute.
std::chrono::steady_clock::time_point fit_wait_until_stopped(pid_t pid) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < give_up) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_field, command, state;
    stat >> pid_field >> command >> state;
    if (state == "T") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return std::chrono::steady_clock::now();
}

TEST_F(MultiWorkerTest, AStoppedWorkerIsNamedWithinTheDeadlinePlusOneSecondEvenRank0) {
  // Rank 0 serves the rendezvous store: when it is the stopped one, the report cannot
  // reach the store and must not wait out the store's deadline too.
  for (int stalled : {0, 1}) {
    SCOPED_TRACE(stalled);
    const std::string scenario = "stall_rank" + std::to_string(stalled);
    const int port = testing::free_port();
    std::vector<pid_t> pids;
    for (int r = 0; r < 2; ++r) pids.push_back(spawn(worker_env(scenario, r, 2, port, scenario)));
    const auto stopped_at = fit_wait_until_stopped(pids[static_cast<size_t>(stalled)]);
    const int other = 1 - stalled;
    const int code = wait_exit(pids[static_cast<size_t>(other)], std::chrono::seconds(60));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped_at).count();
    ::kill(pids[static_cast<size_t>(stalled)], SIGKILL);
    wait_exit(pids[static_cast<size_t>(stalled)]);
    EXPECT_EQ(code, 1);
    EXPECT_THAT(error(other), HasSubstr("ranks that never arrived: " + std::to_string(stalled)));
    // The deadline is 5 s; + 1 s for the report, + 0.5 s for the process to write its
    // error and exit.
    EXPECT_LT(seconds, 6.5);
    RecordProperty("seconds_to_name_stopped_rank" + std::to_string(stalled), std::to_string(seconds));
  }
}

}  // namespace
}  // namespace chorus::testing
