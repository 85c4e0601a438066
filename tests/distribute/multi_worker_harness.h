// Multi-worker test harness: a named scenario runs alone in this process (the reference) or as
// one rank of a job of real processes on 127.0.0.1 (this binary re-run with CHORUS_TEST_WORKER
// set); MultiWorkerTest starts jobs and compares results. One test thread; scenarios register at static init.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/chorus.h"
#include "tests/testing/temp_dir.h"

namespace chorus::testing {

// One run of a scenario: under MultiWorkerMirroredStrategy when it is a worker's (the job
// comes from the environment), else in this process alone. Owns the strategy.
class ScenarioRun {
 public:
  explicit ScenarioRun(bool multi_worker);

  bool multi_worker() const { return strategy_.has_value(); }
  int rank() const { return strategy_ ? strategy_->cluster_resolver().rank : 0; }
  int world_size() const { return strategy_ ? strategy_->cluster_resolver().world_size : 1; }
  // REQUIRES: multi_worker().
  distribute::MultiWorkerMirroredStrategy& strategy() { return *strategy_; }

  // Compiles `model` (load_model: loads the model saved at `path`) under the strategy's
  // scope when multi-worker, else as is.
  void compile(models::Model& model, models::CompileOptions options);
  std::unique_ptr<models::Model> load_model(const std::string& path);

 private:
  std::optional<distribute::MultiWorkerMirroredStrategy> strategy_;
};

// What JobCrasher throws: the whole job dies at one step.
struct JobCrash : std::runtime_error {
  JobCrash() : std::runtime_error("job crash") {}
};

// Throws JobCrash after `steps` training steps, on every rank alike.
class JobCrasher : public models::Callback {
 public:
  explicit JobCrasher(int64_t steps) : steps_(steps) {}
  void on_train_batch_end(int64_t, const models::Logs&) override {
    if (--steps_ == 0) throw JobCrash();
  }

 private:
  int64_t steps_;
};

// BackupAndRestore into scratch_dir()/backup every `save_freq` steps, then a JobCrasher
// after `crash` steps when `crash` > 0.
std::vector<Shared<models::Callback>> backup_callbacks(int64_t save_freq, int64_t crash);

// A job that may crash and start again: `crash_after` > 0 runs fit(crash_after), which
// must throw JobCrash, then returns fit(0); < 0 returns fit(-crash_after) (the job dies
// there); 0 returns fit(0). `fit(crash)` builds and trains from scratch (a BackupAndRestore
// makes the second run resume) and crashes after `crash` > 0 steps.
nlohmann::json crash_and_restart(int64_t crash_after, const std::function<nlohmann::json(int64_t crash)>& fit);

// A scenario returns what the test compares (see outcome()); a worker writes it to
// $CHORUS_TEST_OUT/rank<r>.json, or its exception's message to rank<r>.error.
using Scenario = std::function<nlohmann::json(ScenarioRun&)>;

// Adds scenarios by name; returns true, for a namespace-scope constant to register a
// file's scenarios. Throws std::logic_error on a name registered before.
bool register_scenarios(std::vector<std::pair<std::string, Scenario>> scenarios);

// Runs the scenario `name` as a worker of the job in the environment (multi_worker) or
// alone. Throws ValueError on an unknown name.
nlohmann::json run_scenario(const std::string& name, bool multi_worker);

// The values of `variables`, in order, as a JSON list of lists.
nlohmann::json variable_values(const std::vector<autograd::Variable>& variables);

// What a training scenario leaves behind: final weights (and optimizer state when
// compiled), per-epoch history, and "world_size", the workers the model trained with
// (1: one process).
nlohmann::json outcome(const models::Model& model, const models::History& history);

// The directory a scenario may write to: $CHORUS_TEST_OUT, which MultiWorkerTest sets for
// the workers and for its one-process reference. Throws ValueError when unset.
std::string scratch_dir();

// SGD/Adam-ready compile options of the small MLPs: sparse categorical cross-entropy
// on logits and its accuracy.
models::CompileOptions mlp_compile_options(Shared<optimizers::Optimizer> optimizer);

// Starts jobs of this binary's scenarios and checks their results; each test gets its
// own directory for the ranks' files. Members are public so that a test file's helpers
// can drive jobs too.
class MultiWorkerTest : public TempDirTest {
 public:
  // The environment of worker `rank` of a `world`-worker job on 127.0.0.1:port, running
  // `scenario`; results go to `out` (default: dir()).
  std::vector<std::string> worker_env(const std::string& scenario, int rank, int world, int port,
                                      const std::string& job, int devices = 1, const std::string& out = "") const;
  // Starts this binary as a worker; returns its pid.
  static pid_t spawn(const std::vector<std::string>& env);
  // Waits for `pid` at most `limit`; kills it and returns -1 if it is still running.
  static int wait_exit(pid_t pid, std::chrono::seconds limit = std::chrono::seconds(120));
  // Runs a whole job and returns each rank's exit code.
  std::vector<int> run_job(const std::string& scenario, int world, int devices = 1);

  // Runs `scenario` alone in this process, with CHORUS_TEST_OUT set to dir().
  nlohmann::json run_alone(const std::string& scenario) const;
  // Rank `rank`'s result (null if it wrote none) and error message ("" if none).
  nlohmann::json result(int rank) const;
  std::string error(int rank) const;

  // The largest relative difference between two lists of variables' values (JSON), or
  // +inf (and a failure) when their numbers or sizes differ or they are empty.
  static double worst_relative_difference(const nlohmann::json& want_list, const nlohmann::json& have_list,
                                          const std::string& what);
  // Every rank ran in a job of `world` workers, and its weights (and optimizer state) equal
  // the reference's (<= 1e-5 relative) and each other's bits; the reported metrics,
  // evaluation and predictions are the one process's.
  void expect_matches(const nlohmann::json& reference, int world) const;
  // Runs `scenario` alone, then as jobs of 2 and 3 workers that must all exit 0 and end
  // with the one process's results; after each job runs `also(reference, world)`.
  void expect_two_and_three_workers_match_one_process(
      const std::string& scenario, const std::function<void(const nlohmann::json&, int)>& also = nullptr);
};

}  // namespace chorus::testing
