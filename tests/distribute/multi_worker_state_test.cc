// What the workers of a job must agree on, between real processes on 127.0.0.1 (issue
// 18's blind spots): rank 0's weights and optimizer state reach every rank at start-up,
// however each rank built or restored its model; a checkpoint saved on rank 0 (by
// Model::save or ModelCheckpoint) restores on every rank, Adam's moments included, and
// trains on as the uninterrupted run; a failed write fails every rank; fit's default
// shuffle and an unseeded Dataset::shuffle give every worker its rows of the same global
// batches. The harness is tests/distribute/multi_worker_harness.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

#include <nlohmann/json.hpp>

#include "chorus/chorus.h"
#include "tests/distribute/multi_worker_harness.h"
#include "tests/models/model_test_util.h"
#include "tests/testing/test_names.h"

namespace chorus::testing {
namespace {

using namespace testing::test_names;
using nlohmann::json;

// "seeded_by_rank": every rank builds its model from another seed (the reference: rank
// 0's); rank 0's weights must reach every worker before the first step.
json state_seeded_by_rank_scenario(ScenarioRun& run) {
  layers::set_random_seed(7 + static_cast<uint64_t>(run.rank()));
  auto model = testing::small_mlp(4, 8);
  run.compile(*model, testing::mlp_compile_options(optimizers::SGD({.learning_rate = 0.1})));
  const json initial = testing::variable_values(model->weights());
  auto train = testing::separable_blobs(98, 3);
  models::History history =
      model->fit(train.x, train.y, {.epochs = 3, .batch_size = 16, .verbose = 0, .shuffle = false});
  json out = testing::outcome(*model, history);
  out["initial_weights"] = initial;
  return out;
}

// "restored_by_rank": every rank trains alone with Adam on its own data and seed (rank r
// for 4 + r steps), saves, then restores that model under the strategy: weights and
// optimizer state (Adam's iterations and moments) differ by rank, and rank 0's must reach
// every worker before the first step.
json state_restored_by_rank_scenario(ScenarioRun& run) {
  layers::set_random_seed(7 + static_cast<uint64_t>(run.rank()));
  auto alone = testing::small_mlp(4, 8);
  alone->compile(testing::mlp_compile_options(optimizers::Adam(0.01)));
  auto own = testing::separable_blobs(64 + 16 * run.rank(), 20 + static_cast<uint64_t>(run.rank()));
  alone->fit(own.x, own.y, {.epochs = 1, .batch_size = 16, .verbose = 0, .shuffle = false});
  const std::string path = testing::scratch_dir() + "/alone-of-" + std::to_string(run.world_size()) + "-rank" +
                           std::to_string(run.rank());
  alone->save(path);
  std::unique_ptr<models::Model> model = run.load_model(path);
  const json initial = testing::variable_values(model->weights());
  const json initial_optimizer = testing::variable_values(model->optimizer().variables());
  auto train = testing::separable_blobs(98, 3);
  models::History history =
      model->fit(train.x, train.y, {.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false});
  json out = testing::outcome(*model, history);
  out["initial_weights"] = initial;
  out["initial_optimizer"] = initial_optimizer;
  return out;
}

// "save_restore": two epochs with Adam, saved (rank 0 writes, the others wait), restored
// on every rank and trained two more; the reference continues its model in memory.
// "checkpoint_restore": the same, saved by a ModelCheckpoint at the end of each epoch
// (checkpoint-of-<world>-<epoch>) and restored from the second epoch's.
json state_save_restore_scenario(ScenarioRun& run, bool through_callback) {
  layers::set_random_seed(7);
  auto model = testing::small_mlp(4, 8);
  run.compile(*model, testing::mlp_compile_options(optimizers::Adam(0.01)));
  auto train = testing::separable_blobs(98, 3);
  const std::string path = testing::scratch_dir() + "/checkpoint-of-" + std::to_string(run.world_size());
  models::FitOptions first{.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false};
  if (run.multi_worker() && through_callback) {
    first.callbacks = {std::make_shared<callbacks::ModelCheckpoint>(path + "-{epoch}")};
  }
  model->fit(train.x, train.y, first);
  models::FitOptions rest = first;
  rest.callbacks = {};
  rest.epochs = 4;
  rest.initial_epoch = 2;
  if (!run.multi_worker()) return testing::outcome(*model, model->fit(train.x, train.y, rest));
  if (!through_callback) model->save(path);
  std::unique_ptr<models::Model> restored = run.load_model(through_callback ? path + "-2" : path);
  return testing::outcome(*restored, restored->fit(train.x, train.y, rest));
}

// "save_fails": rank 0 cannot write (the parent is a regular file): every rank must fail, at once.
json state_save_fails_scenario(ScenarioRun& run) {
  layers::set_random_seed(7);
  auto model = testing::small_mlp(4, 8);
  run.compile(*model, {.optimizer = optimizers::SGD({.learning_rate = 0.1}),
                       .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const std::string out = testing::scratch_dir();
  std::ofstream(out + "/not_a_dir") << "x";
  model->save_weights(out + "/not_a_dir/model.weights.safetensors");
  return json{};
}

// "reinitialize": joining the same job again is a no-op; another job is refused.
json state_reinitialize_scenario(ScenarioRun& run) {
  const cluster::ClusterSpec cluster = run.strategy().cluster_resolver();
  distribution::initialize(cluster);
  cluster::ClusterSpec other = cluster;
  other.master_port += 1;
  try {
    distribution::initialize(other);
  } catch (const ValueError& e) {
    return json{{"error", e.what()}};
  }
  return json{{"error", ""}};
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

// The "shuffle_*" scenarios' data: 98 rows in batches of 16, 7 steps an epoch, 3 epochs;
// rank r reseeds its layer stream with kShuffleSeed + r before fit.
constexpr int64_t kShuffleRows = 98, kShuffleBatch = 16, kShuffleStepsPerEpoch = 7, kShuffleEpochs = 3;
constexpr uint64_t kShuffleSeed = 11;

// "shuffle_arrays" (fit's default shuffle of arrays, seeded by the layers' stream) and
// "shuffle_dataset" (an unseeded Dataset::shuffle, seeded by the job's agreed stream):
// every worker must take its rows of the same global batches. Each records the rows it
// trained on. After the model is built the ranks' layer streams differ, as they may in a
// user's job, so fit's shuffle must be rank 0's.
json state_shuffle_scenario(ScenarioRun& run, bool arrays) {
  const testing::Blobs train = testing::separable_blobs(kShuffleRows, 3);
  auto model = row_recording_mlp(train.x);
  layers::set_random_seed(kShuffleSeed + static_cast<uint64_t>(run.rank()));
  run.compile(*model, testing::mlp_compile_options(optimizers::SGD({.learning_rate = 0.1})));
  models::History history;
  if (arrays) {
    history = model->fit(train.x, train.y, {.epochs = kShuffleEpochs, .batch_size = kShuffleBatch, .verbose = 0});
  } else {
    const auto shuffled =
        data::Dataset::from_tensor_slices(Tree::list({train.x, train.y})).shuffle(kShuffleRows).batch(kShuffleBatch);
    history = model->fit(shuffled, {.epochs = kShuffleEpochs, .verbose = 0});
  }
  json out = testing::outcome(*model, history);
  out["rows"] = model->rows_by_step();
  return out;
}

[[maybe_unused]] const bool kStateScenariosRegistered = testing::register_scenarios({
    {"seeded_by_rank", state_seeded_by_rank_scenario},
    {"restored_by_rank", state_restored_by_rank_scenario},
    {"save_restore", [](ScenarioRun& run) { return state_save_restore_scenario(run, false); }},
    {"checkpoint_restore", [](ScenarioRun& run) { return state_save_restore_scenario(run, true); }},
    {"save_fails", state_save_fails_scenario},
    {"reinitialize", state_reinitialize_scenario},
    {"shuffle_arrays", [](ScenarioRun& run) { return state_shuffle_scenario(run, true); }},
    {"shuffle_dataset", [](ScenarioRun& run) { return state_shuffle_scenario(run, false); }},
});

// One process trains row_recording_mlp on the global batches `steps` (row ids of the
// "shuffle_*" scenarios' data, kShuffleStepsPerEpoch a pass) in order: the reference
// for a multi-worker run that took them.
json state_replay_in_one_process(const std::vector<std::vector<int64_t>>& steps) {
  const testing::Blobs train = testing::separable_blobs(kShuffleRows, 3);
  std::vector<Tree> batches;
  for (const auto& rows : steps) {
    const Tensor ids = from_values<int32_t>(std::vector<int32_t>(rows.begin(), rows.end()),
                                            Shape{static_cast<int64_t>(rows.size())});
    batches.push_back(Tree::list({ops::take(train.x, ids, 0), ops::take(train.y, ids, 0)}));
  }
  auto model = row_recording_mlp(train.x);
  model->compile(testing::mlp_compile_options(optimizers::SGD({.learning_rate = 0.1})));
  const auto dataset = data::Dataset::from_generator([batches](int64_t epoch) {
    auto next = std::make_shared<size_t>(static_cast<size_t>(epoch * kShuffleStepsPerEpoch));
    const size_t end = std::min(batches.size(), *next + static_cast<size_t>(kShuffleStepsPerEpoch));
    return data::Dataset::Generator([batches, next, end]() -> std::optional<Tree> {
      if (*next >= end) return std::nullopt;
      return batches[(*next)++];
    });
  });
  models::History history = model->fit(dataset, {.epochs = kShuffleEpochs, .verbose = 0});
  return testing::outcome(*model, history);
}

// Each step's global batch of a finished "shuffle_*" job of `world` workers: the ranks'
// rows in rank order.
std::vector<std::vector<int64_t>> state_global_batches(const MultiWorkerTest& test, int world) {
  std::vector<std::vector<int64_t>> steps(static_cast<size_t>(kShuffleEpochs * kShuffleStepsPerEpoch));
  for (int r = 0; r < world; ++r) {
    const json got = test.result(r);  // alive while its items are read
    EXPECT_TRUE(got.contains("rows")) << "rank " << r << ": " << test.error(r);
    if (!got.contains("rows")) return {};
    for (const auto& [step, rows] : got["rows"].items()) {
      const size_t k = std::stoul(step);
      EXPECT_LT(k, steps.size()) << "rank " << r;
      if (k >= steps.size()) return {};
      for (const auto& row : rows) steps[k].push_back(row.get<int64_t>());
    }
  }
  return steps;
}

// Runs a "shuffle_*" scenario as jobs of 2 and 3 workers. Each step's global batch must
// take every row once an epoch, in an order that changes from epoch to epoch; one process
// trained on those batches must end where the workers do.
void state_expect_shuffles_agree_and_match_one_process(MultiWorkerTest& test, const std::string& scenario) {
  for (int world : {2, 3}) {
    SCOPED_TRACE(world);
    EXPECT_EQ(test.run_job(scenario, world), std::vector<int>(static_cast<size_t>(world), 0));
    const std::vector<std::vector<int64_t>> steps = state_global_batches(test, world);
    ASSERT_FALSE(steps.empty());
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
    test.expect_matches(state_replay_in_one_process(steps), world);
  }
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
      const json initial = result(r).value("initial_optimizer", json());
      EXPECT_NE(initial, result(0).value("initial_optimizer", json())) << r;
      ASSERT_FALSE(initial.empty()) << r;
      EXPECT_EQ(initial[0], json::array({4.0 + r})) << r;  // the iterations of rank r's own training
    }
  });
}

TEST_F(MultiWorkerTest, SavedOnRank0AndRestoredOnEveryRankTrainsOnAsOneProcessDoes) {
  expect_two_and_three_workers_match_one_process("save_restore", [&](const json& reference, int) {
    EXPECT_EQ(reference["history"]["loss"].size(), 2u);  // the two epochs after the restore
  });
}

TEST_F(MultiWorkerTest, AModelCheckpointWrittenOnRank0RestoresOnEveryRankAndTrainsOnAsOneProcessDoes) {
  expect_two_and_three_workers_match_one_process("checkpoint_restore", [&](const json& reference, int world) {
    EXPECT_EQ(reference["history"]["loss"].size(), 2u);  // the two epochs after the restore
    for (int epoch : {1, 2}) {
      const std::string name = "checkpoint-of-" + std::to_string(world) + "-" + std::to_string(epoch);
      EXPECT_TRUE(std::filesystem::exists(dir_ / name / "optimizer.safetensors")) << name;
    }
  });
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

TEST_F(MultiWorkerTest, FitsDefaultShuffleGivesEveryWorkerTheSameGlobalBatches) {
  state_expect_shuffles_agree_and_match_one_process(*this, "shuffle_arrays");
}

TEST_F(MultiWorkerTest, AnUnseededDatasetShuffleGivesEveryWorkerTheSameGlobalBatches) {
  state_expect_shuffles_agree_and_match_one_process(*this, "shuffle_dataset");
}

}  // namespace
}  // namespace chorus::testing
