// DistributedEmbedding across worker processes (issue 21): each of 2 workers keeps half of
// every table's rows and of their optimizer state, lookups and gradient rows travel by
// all-to-all over Gloo, and fit, evaluate, predict and save end where one process on one
// device does — with Adagrad and Adam, one or two devices per worker.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "chorus/chorus.h"
#include "tests/distribute/multi_worker_harness.h"
#include "tests/testing/shared_data.h"
#include "tools/chorus/recipes/retrieval_tutorial.h"

namespace chorus::testing {
namespace {

using nlohmann::json;

constexpr int64_t kUsers = 51;  // odd: the second worker's block ends in a padding row
constexpr int64_t kMovies = 40;

// The two-tower model on one DistributedEmbedding with a table per tower: the score is
// the dot product of a user's and a movie's rows.
class EmbeddingTwoTower : public models::Model {
 public:
  EmbeddingTwoTower()
      : embedding_(add<recsys::DistributedEmbedding>(std::vector<recsys::FeatureConfig>{
            {.name = "user_id", .table = table("user_table", kUsers)},
            {.name = "movie_id", .table = table("movie_table", kMovies)}},
            "embedding")) {}
  Tree call(const Tree& x, bool) override {
    Tree rows = (*embedding_)(x);
    return ops::sum(rows["user_id"].tensor() * rows["movie_id"].tensor(), 1, true);
  }
  const recsys::DistributedEmbedding& embedding() const { return *embedding_; }

 private:
  static std::shared_ptr<recsys::TableConfig> table(const std::string& name, int64_t rows) {
    return std::make_shared<recsys::TableConfig>(
        recsys::TableConfig{.name = name, .vocabulary_size = rows, .embedding_dim = 8});
  }
  recsys::DistributedEmbedding* embedding_;
};

// n ({user_id, movie_id}, rating (1,)) rows, the same in every process; ids repeat within
// a batch, so the keepers add up rows from both workers.
data::Dataset embedding_ratings(int64_t n, uint64_t seed) {
  Generator gen(seed);
  Tensor users = Tensor::empty({n}, kInt64), movies = Tensor::empty({n}, kInt32);
  for (int64_t i = 0; i < n; ++i) {
    users.data<int64_t>()[i] = (i * 7 + static_cast<int64_t>(seed)) % kUsers;
    movies.data<int32_t>()[i] = static_cast<int32_t>((i * 13) % kMovies);
  }
  return data::Dataset::from_tensor_slices(
      Tree::list({Tree{{"user_id", users}, {"movie_id", movies}}, uniform(Shape{n, 1}, gen, 0, 1)}));
}

// Each rank draws other initial tables: the job trains rank 0's (the one process's).
json fit_embedding_scenario(ScenarioRun& run, Shared<optimizers::Optimizer> optimizer) {
  layers::set_random_seed(13 + static_cast<uint64_t>(run.rank()));
  EmbeddingTwoTower model;
  run.compile(model, {.optimizer = std::move(optimizer), .loss = "mse"});
  // 250 rows in batches of 32: the last batch (26 rows) splits unevenly.
  models::History history = model.fit(embedding_ratings(250, 1).batch(32), {.epochs = 3, .verbose = 0});
  json out = testing::outcome(model, history);
  const data::Dataset test = embedding_ratings(70, 2).batch(16);
  for (const auto& [key, value] : model.evaluate(test, {.verbose = 0})) out["evaluate"][key] = value;
  out["predict"] = model.predict(test).tensor().to_vector<float>();
  out["user_rows_kept"] = model.embedding().embeddings("user_table").shape()[0];
  model.save(testing::scratch_dir() + "/saved");
  return out;
}

// The two towers (built first, as BackupAndRestore needs) with Adagrad, backed up every 3 steps; `crash_after` > 0 crashes the job
// there first and starts it again; < 0 crashes it there and ends.
json embedding_backup_scenario(ScenarioRun& run, int64_t crash_after) {
  auto fit = [&](int64_t crash) {
    layers::Layer::reset_names();
    layers::set_random_seed(13);
    EmbeddingTwoTower model;
    model(Tree{{"user_id", from_values<int64_t>({0}, Shape{1})}, {"movie_id", from_values<int64_t>({0}, Shape{1})}});
    run.compile(model, {.optimizer = optimizers::Adagrad(0.2), .loss = "mse"});
    models::History history = model.fit(embedding_ratings(250, 1).batch(32),
                                        {.epochs = 3, .verbose = 0, .callbacks = testing::backup_callbacks(3, crash)});
    return testing::outcome(model, history);
  };
  return testing::crash_and_restart(crash_after, fit);
}

// The retrieval tutorial with 1M-row user and movie tables as DistributedEmbedding towers.
// `retrieve_in_validation`: refused across workers, which hold parts of the movie table.
json split_tables_tutorial_scenario(bool retrieve_in_validation) {
  auto dir = testing::shared_data_dir("ml-100k");
  if (!dir) throw ValueError(testing::shared_data_missing("ml-100k"));
  recipes::RetrievalTutorialOptions options{.data_dir = *dir,
                                             .epochs = 2,
                                             .validation_freq = 1,
                                             .verbose = 0,
                                             .retrieve_in_validation = retrieve_in_validation,
                                             .table_rows = 1'000'000,
                                             .distributed_embedding = true,
                                             .sample_users = {793, 188}};
  const recipes::RetrievalTutorialResult result = recipes::run_retrieval_tutorial(options);
  json out;
  for (const auto& [key, values] : result.history.history) out["history"][key] = values;
  for (const auto& recs : result.recommendations) out["recommendations"].push_back(recs.titles);
  out["movie_rows_kept"] = result.movie_rows_kept;
  return out;
}

// Rank 1's third batch holds a user id past the table: its lookup fails before any
// exchange, and the other worker must not wait for it forever.
json bad_id_scenario(ScenarioRun& run) {
  layers::set_random_seed(13);
  EmbeddingTwoTower model;
  run.compile(model, {.optimizer = optimizers::Adagrad(0.2), .loss = "mse"});
  data::Dataset data = embedding_ratings(128, 1);
  if (run.rank() == 1) {
    data = data.enumerate().map([](const Tree& item) {
      Tree example = item[1];
      if (item[0].tensor().item<int64_t>() == 85) example[0]["user_id"] = scalar(kUsers, kInt64);
      return example;
    });
  }
  model.fit(data.batch(32), {.epochs = 1, .verbose = 0, .shuffle = false});
  return json::object();
}

[[maybe_unused]] const bool kEmbeddingScenariosRegistered = testing::register_scenarios({
    {"embedding_adagrad", [](ScenarioRun& run) { return fit_embedding_scenario(run, optimizers::Adagrad(0.2)); }},
    {"embedding_adam",
     [](ScenarioRun& run) { return fit_embedding_scenario(run, optimizers::Adam({.learning_rate = 0.01})); }},
    {"split_tables_tutorial", [](ScenarioRun&) { return split_tables_tutorial_scenario(false); }},
    {"split_tables_tutorial_retrieving", [](ScenarioRun&) { return split_tables_tutorial_scenario(true); }},
    {"embedding_bad_id", bad_id_scenario},
    {"embedding_backup", [](ScenarioRun& run) { return embedding_backup_scenario(run, 0); }},
    {"embedding_backup_crash_mid_epoch", [](ScenarioRun& run) { return embedding_backup_scenario(run, 11); }},
    {"embedding_backup_crash_only", [](ScenarioRun& run) { return embedding_backup_scenario(run, -11); }},
});

// The saved model's weights, loaded into a model on one device.
std::vector<std::vector<float>> saved_weights(const std::string& dir) {
  EmbeddingTwoTower model;
  model.predict(embedding_ratings(4, 3).batch(4));  // builds it
  model.load_weights(dir + "/saved");
  std::vector<std::vector<float>> out;
  for (const auto& v : model.weights()) out.push_back(v.value().to_vector<float>());
  return out;
}

TEST_F(MultiWorkerTest, DistributedEmbeddingOnTwoWorkersMatchesOneDevice) {
  for (const char* scenario : {"embedding_adagrad", "embedding_adam"}) {
    for (int devices : {1, 2}) {
      SCOPED_TRACE(std::string(scenario) + " with devices " + std::to_string(devices));
      const json reference = run_alone(scenario);
      EXPECT_EQ(reference["user_rows_kept"], kUsers);
      EXPECT_EQ(run_job(scenario, 2, devices), (std::vector<int>{0, 0}));
      expect_matches(reference, 2);
      // Each worker kept half the rows (of 51: 26, the second's last one padding).
      EXPECT_EQ(result(0)["user_rows_kept"], 26);
      EXPECT_EQ(result(1)["user_rows_kept"], 26);
      // Saving gathered whole tables: they load into one device's model.
      const auto loaded = saved_weights(dir());
      ASSERT_EQ(loaded.size(), result(0)["weights"].size());
      for (size_t i = 0; i < loaded.size(); ++i) EXPECT_EQ(json(loaded[i]), result(0)["weights"][i]) << i;
    }
  }
}

TEST_F(MultiWorkerTest, AnIdOutsideASplitTableFailsEveryWorkerNamingIt) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(run_job("embedding_bad_id", 2), (std::vector<int>{1, 1}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));  // the harness's deadline is 5 s
  EXPECT_THAT(error(1), ::testing::HasSubstr("embedding: feature 'user_id': index 51 out of range [0, 51) in batch "
                                             "element 5"));
  EXPECT_FALSE(error(0).empty());
}

// A backup holds whole tables: a job restarted after a crash ends as the uninterrupted one
// bit for bit, and a backup of 2 workers resumes in one process (whole tables) and ends
// where the 2 workers do.
TEST_F(MultiWorkerTest, SplitTablesAreBackedUpWholeAndRestoreOnAnyWorkerCount) {
  ASSERT_EQ(run_job("embedding_backup", 2), std::vector<int>(2, 0)) << error(0) << error(1);
  const json uninterrupted = result(0);
  ASSERT_EQ(run_job("embedding_backup_crash_mid_epoch", 2), std::vector<int>(2, 0)) << error(0) << error(1);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(result(rank)["weights"], uninterrupted["weights"]) << rank;
    EXPECT_EQ(result(rank)["optimizer"], uninterrupted["optimizer"]) << rank;
    EXPECT_EQ(result(rank)["history"], uninterrupted["history"]) << rank;
  }
  EXPECT_EQ(run_job("embedding_backup_crash_only", 2), std::vector<int>(2, 1));
  EXPECT_THAT(error(0), ::testing::HasSubstr("job crash"));
  const json resumed_alone = run_alone("embedding_backup");
  EXPECT_LE(worst_relative_difference(uninterrupted["weights"], resumed_alone["weights"], "weights"), 1e-5);
  EXPECT_LE(worst_relative_difference(uninterrupted["optimizer"], resumed_alone["optimizer"], "optimizer"), 1e-5);
}

// The tutorial runs its own distribution (DataParallel over a job the launcher's
// environment describes): with 1M-row tables, each of 2 workers keeps 500,000 movie rows,
// and the losses and recommendations are one process's.
TEST_F(MultiWorkerTest, RetrievalTutorialWithMillionRowTablesSplitOverTwoWorkers) {
  if (!testing::shared_data_dir("ml-100k")) GTEST_SKIP() << testing::shared_data_missing("ml-100k");
  const json reference = run_alone("split_tables_tutorial");
  EXPECT_EQ(reference["movie_rows_kept"], 1'000'000);
  EXPECT_EQ(run_job("split_tables_tutorial", 2), (std::vector<int>{0, 0}));
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + error(r));
    const json got = result(r);
    EXPECT_EQ(got["movie_rows_kept"], 500'000);
    EXPECT_EQ(got["recommendations"], reference["recommendations"]);
    ASSERT_EQ(got["history"].size(), reference["history"].size());
    for (const auto& [key, values] : reference["history"].items()) {
      ASSERT_EQ(got["history"][key].size(), values.size()) << key;
      for (size_t e = 0; e < values.size(); ++e) {
        EXPECT_NEAR(got["history"][key][e].get<double>(), values[e].get<double>(), 1e-6) << key << " " << e;
      }
    }
  }
  EXPECT_EQ(run_job("split_tables_tutorial_retrieving", 2), (std::vector<int>{1, 1}));
  EXPECT_THAT(error(0), ::testing::HasSubstr("retrieval tutorial: retrieve_in_validation would retrieve from one "
                                             "worker's rows of the movie table split by distributed_embedding"));
}

}  // namespace
}  // namespace chorus::testing
