// The step profiler: events only while recording, nested and per thread; the Chrome trace
// it writes, read back by Python's json module (an independent reader) with the
// categories a training step records; self times computed exactly; ProfileBatches',
// TensorBoard's profile_batch and `chorus train --profile` / `chorus profile summarize`
// end to end; and the error for each bad range.
#include "chorus/profiler/profiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "chorus/callbacks/profile_batches.h"
#include "chorus/callbacks/tensorboard.h"
#include "chorus/chorus.h"
#include "chorus/io/atomic_file.h"
#include "chorus/profiler/chrome_trace.h"
#include "tests/testing/run_chorus.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"

namespace chorus::profiler {
namespace {

using namespace testing::test_names;
namespace fs = std::filesystem;

class ProfilerTest : public testing::TempDirTest {
 protected:
  void TearDown() override {
    if (recording()) stop();
    TempDirTest::TearDown();
  }
};

TEST_F(ProfilerTest, RecordsNestedEventsPerThreadOnlyWhileStarted) {
  { Scope before("layer", "ignored"); }
  start();
  EXPECT_THAT([] { start(); }, ThrowsMessage<ValueError>(
                                   "profiler: a profile is recording already; stop it before starting another"));
  {
    Scope outer("step", "train_step");
    { Scope inner("layer", "d1", "Dense"); }
    std::thread([] { Scope other("collective", "all_reduce"); }).join();
  }
  const std::vector<Event> events = stop();
  { Scope after("layer", "ignored"); }
  ASSERT_EQ(events.size(), 3U);
  EXPECT_EQ(events[0].name, "train_step");
  EXPECT_STREQ(events[0].category, "step");
  EXPECT_EQ(events[1].name, "d1 (Dense)");
  EXPECT_GE(events[1].start_ns, events[0].start_ns);
  EXPECT_LE(events[1].start_ns + events[1].duration_ns, events[0].start_ns + events[0].duration_ns);
  EXPECT_EQ(events[2].name, "all_reduce");
  EXPECT_NE(events[2].thread, events[0].thread);
  EXPECT_EQ(events[0].thread, events[1].thread);
  EXPECT_THAT([] { stop(); }, ThrowsMessage<ValueError>("profiler: no profile is recording"));
}

TEST_F(ProfilerTest, SummaryTakesNestedTimeOutOfSelfTime) {
  // On thread 0: a step of 100 us holding two layers (30 us and 10 us, the first holding a
  // backward op of 5 us); on thread 1 a collective of 30 us.
  const std::vector<Event> events{{"step", "step", 0, 100'000, 0},
                                  {"d1 (Dense)", "layer", 10'000, 30'000, 0},
                                  {"matmul", "backward", 12'000, 5'000, 0},
                                  {"d2 (Dense)", "layer", 50'000, 10'000, 0},
                                  {"all_reduce", "collective", 0, 30'000, 1}};
  const fs::path file = dir_ / "trace.json";
  write_chrome_trace(events, file);
  const std::vector<KernelTotal> totals = summarize_trace(file);
  ASSERT_EQ(totals.size(), 5U);
  EXPECT_EQ(totals[0].name, "step");
  EXPECT_DOUBLE_EQ(totals[0].self_ms, 0.060);
  EXPECT_DOUBLE_EQ(totals[0].total_ms, 0.100);
  EXPECT_EQ(totals[1].name, "all_reduce");
  EXPECT_EQ(totals[2].name, "d1 (Dense)");
  EXPECT_DOUBLE_EQ(totals[2].self_ms, 0.025);
  EXPECT_EQ(totals[3].name, "d2 (Dense)");
  EXPECT_EQ(totals[4].name, "matmul");
  EXPECT_THAT(format_summary(totals, 2), AllOf(HasSubstr("self ms"), HasSubstr("step"), HasSubstr("all_reduce"),
                                              Not(HasSubstr("matmul"))));
  io::write_file_atomically(dir_ / "bad.json", "[1, 2");
  EXPECT_THAT([&] { summarize_trace(dir_ / "bad.json"); },
              ThrowsMessage<ValueError>(HasSubstr("bad.json: not a Chrome trace (not JSON)")));
}

// Fits a 3-Dense MLP for 2 epochs of 4 batches with `callback`.
void fit_mlp(Shared<models::Callback> callback) {
  layers::set_random_seed(1);
  Tensor x = layers::Input({6});
  Tensor h = layers::Dense(8, {.activation = "relu", .name = "d1"})(x);
  h = layers::Dense(8, {.activation = "relu", .name = "d2"})(h);
  models::Model model(x, layers::Dense(2, {.name = "d3"})(h));
  model.compile({.optimizer = "adam", .loss = "mse"});
  Generator gen(2);
  model.fit(uniform(Shape{32, 6}, gen), uniform(Shape{32, 2}, gen),
            {.epochs = 2, .batch_size = 8, .verbose = 0, .callbacks = {std::move(callback)}});
}

// Python's json module's reading of `trace`: "<category> <name> <count>" lines, and
// "invalid" for an event without a name, a category, a pid, a tid, ts >= 0 and dur >= 0.
std::string read_with_python(const fs::path& trace) {
  const fs::path script = trace.parent_path() / "read_trace.py";
  io::write_file_atomically(script, R"(import collections, json, sys
trace = json.load(open(sys.argv[1]))
counts = collections.Counter()
for e in trace["traceEvents"]:
    if e["ph"] != "X":
        continue
    ok = isinstance(e["name"], str) and isinstance(e["cat"], str) and isinstance(e["pid"], int)
    ok = ok and isinstance(e["tid"], int) and e["ts"] >= 0 and e["dur"] >= 0
    counts["invalid" if not ok else e["cat"] + " " + e["name"]] += 1
for key in sorted(counts):
    print(key, counts[key])
)");
  FILE* pipe = ::popen(("python3 '" + script.string() + "' '" + trace.string() + "' 2>&1").c_str(), "r");
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.append(buffer, n);
  EXPECT_EQ(::pclose(pipe), 0) << out;
  return out;
}

TEST_F(ProfilerTest, ProfileBatchesWritesTheRangesStepsAsATraceThatPythonReads) {
  const fs::path file = dir_ / "profiles" / "mlp.trace.json";
  fit_mlp(callbacks::ProfileBatches(file, 3, 6));  // batches 3 and 4 of epoch 1, 1 and 2 of epoch 2
  const std::string counts = read_with_python(file);
  EXPECT_THAT(counts, HasSubstr("step train_step 4\n"));
  EXPECT_THAT(counts, HasSubstr("layer d1 (Dense) 4\n"));
  EXPECT_THAT(counts, HasSubstr("optimizer adam 4\n"));
  EXPECT_THAT(counts, HasSubstr("backward matmul "));
  EXPECT_THAT(counts, HasSubstr("op matmul "));  // forward and backward products alike
  EXPECT_THAT(counts, HasSubstr("op relu 8\n"));  // d1's and d2's, in 4 steps
  EXPECT_THAT(counts, HasSubstr("data next "));
  EXPECT_THAT(counts, Not(HasSubstr("invalid")));
}

TEST_F(ProfilerTest, TensorBoardProfilesIntoItsPluginFolder) {
  fit_mlp(callbacks::TensorBoard((dir_ / "logs").string(), {.profile_batch = {2, 2}}));
  std::vector<fs::path> traces;
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "logs" / "train" / "plugins" / "profile")) {
    if (entry.path().string().ends_with(".trace.json")) traces.push_back(entry.path());
  }
  ASSERT_EQ(traces.size(), 1U);
  EXPECT_THAT(read_with_python(traces[0]), HasSubstr("step train_step 1\n"));
  EXPECT_THAT([&] { callbacks::TensorBoard("logs", {.profile_batch = {5, 3}}); },
              ThrowsMessage<ValueError>("TensorBoard: profile_batch must be {0, 0} (no profiling) or a range of batches "
                                        "{first, last} with 1 <= first <= last. Received: profile_batch={5, 3}"));
  EXPECT_THAT([&] { callbacks::TensorBoard("logs", {.profile_batch = {0, 4}}); }, ThrowsMessage<ValueError>(HasSubstr("{0, 4}")));
}

TEST_F(ProfilerTest, ABadRangeIsRefusedAndAFitThatEndsBeforeItWritesNothing) {
  EXPECT_THAT([&] { callbacks::ProfileBatches(dir_ / "p.json", 0, 3); },
              ThrowsMessage<ValueError>("ProfileBatches: expected a range of batches 1 <= first <= last (counted from 1 "
                                        "across epochs). Received: first=0, last=3"));
  EXPECT_THAT([&] { callbacks::ProfileBatches("", 1, 3); },
              ThrowsMessage<ValueError>("ProfileBatches: expected a file to write the profile to"));
  ::testing::internal::CaptureStderr();
  fit_mlp(callbacks::ProfileBatches(dir_ / "late.json", 50, 60));
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("ProfileBatches: training ended after 8 batches, before batch 50; no profile written to"));
  EXPECT_FALSE(fs::exists(dir_ / "late.json"));
  EXPECT_FALSE(recording());
}

TEST_F(ProfilerTest, TrainWritesAProfileThatSummarizePrints) {
  const std::optional<std::string> data = testing::shared_data_dir("ml-100k");
  if (!data) GTEST_SKIP() << testing::shared_data_missing("ml-100k");
  const fs::path file = dir_ / "retrieval.trace.json";
  const auto train = testing::run_chorus(fmt::format(
      "train movielens-retrieval --data '{}' --epochs 1 --verbose 0 --profile {} --profile-batches 5,7", *data,
      file.string()));
  ASSERT_EQ(train.exit_code, 0) << train.output;
  EXPECT_THAT(read_with_python(file), HasSubstr("step train_step 3\n"));
  const auto summary = testing::run_chorus(fmt::format("profile summarize {} --top 3", file.string()));
  ASSERT_EQ(summary.exit_code, 0) << summary.output;
  EXPECT_THAT(summary.output, HasSubstr("self ms"));
  EXPECT_EQ(std::count(summary.output.begin(), summary.output.end(), '\n'), 4);  // the header and 3 rows
  const auto bad = testing::run_chorus("train movielens-retrieval --profile x.json --profile-batches 5,oops");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.output, HasSubstr("--profile-batches"));
  const auto trailing = testing::run_chorus("train movielens-retrieval --profile x.json --profile-batches 5x,7");
  EXPECT_NE(trailing.exit_code, 0);
  EXPECT_THAT(trailing.output, HasSubstr("expected FIRST,LAST (or one batch), got '5x,7'"));
}

}  // namespace
}  // namespace chorus::profiler
