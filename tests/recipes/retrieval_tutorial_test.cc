// The keras-rs retrieval tutorial: the model's loss and predictions on a hand-made batch,
// then the whole tutorial on the real MovieLens 100K data (skipped when the shared data
// is absent): the tutorial's plateau near 0.477, then a drop to val_loss <= 0.20 at
// epoch 50 (the tutorial reports 0.1586, PyTorch's peer 0.1564).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "chorus/backend/cpu/parallel.h"
#include "tests/testing/shared_data.h"
#include "tools/chorus/recipes/retrieval_tutorial.h"

namespace chorus::recipes {
namespace {

TEST(RetrievalTutorialTest, ModelLossIsTheMseOfDotProductsAndPredictionsAreTopTen) {
  backend::cpu::set_intra_op_threads(1);
  layers::set_random_seed(3);
  RetrievalModel model(/*num_users=*/5, /*num_candidates=*/12, /*embedding_dimension=*/4);
  const Tensor users = from_values<int32_t>({1, 4, 2});
  const Tree y{{"movie_id", from_values<int32_t>({3, 11, 0})}, {"rating", from_values<float>({0.0f, 0.5f, 1.0f})}};

  Tree train_out = model(Tree(users), /*training=*/true);
  EXPECT_FALSE(train_out.contains("predictions"));  // no retrieval while training
  const Tensor loss = model.compute_loss(Tree(users), y, train_out);

  const std::vector<float> u = model.user_table().value().to_vector<float>();
  const std::vector<float> m = model.candidate_table().value().to_vector<float>();
  const std::vector<int> user_rows{1, 4, 2}, movie_rows{3, 11, 0};
  const std::vector<double> ratings{0.0, 0.5, 1.0};
  double expected = 0;
  for (size_t b = 0; b < 3; ++b) {
    double dot = 0;
    for (int i = 0; i < 4; ++i) dot += double{u[user_rows[b] * 4 + i]} * m[movie_rows[b] * 4 + i];
    expected += (dot - ratings[b]) * (dot - ratings[b]) / 3;
  }
  EXPECT_NEAR(loss.item<float>(), expected, 1e-6);

  // Inference retrieves from the movie table itself.
  Tree out = model(Tree(users), /*training=*/false);
  const Tensor predictions = out["predictions"].tensor();
  EXPECT_EQ(predictions.shape(), (Shape{3, 10}));
  EXPECT_EQ(predictions.dtype(), kInt32);
  EXPECT_EQ(model.retrieval().candidate_embeddings().value().impl(),
            model.candidate_table().value().impl());
  // Row 0's first pick is the movie with the largest dot product with user 1.
  int best = 0;
  double best_score = -1e30;
  for (int j = 0; j < 12; ++j) {
    double s = 0;
    for (int i = 0; i < 4; ++i) s += double{u[4 + i]} * m[j * 4 + i];
    if (s > best_score) best_score = s, best = j;
  }
  EXPECT_EQ(predictions.data<int32_t>()[0], best);
  EXPECT_TRUE(model.weights().size() == 2);  // the retrieval adds no weights
}

TEST(RetrievalTutorialTest, FitWithSparseTableGradientsMatchesDenseStepsBitForBit) {
  // Large tables (rows >> batch): train_step keeps their gradients sparse and Adagrad
  // updates only the rows a batch read. A hand-written loop with dense gradients must give
  // the same bits.
  backend::cpu::set_intra_op_threads(1);
  constexpr int64_t kUsers = 300, kMovies = 400, kRows = 24, kBatch = 8;
  std::vector<int32_t> user_ids, movie_ids;
  std::vector<float> ratings;
  for (int64_t i = 0; i < kRows; ++i) {
    user_ids.push_back(static_cast<int32_t>((i * 37) % 11));  // repeats within a batch
    movie_ids.push_back(static_cast<int32_t>((i * 101) % kMovies));
    ratings.push_back(static_cast<float>(i % 5) / 4.0f);
  }
  const Tensor users = from_values<int32_t>(user_ids, {kRows});
  const Tree y{{"movie_id", from_values<int32_t>(movie_ids, {kRows})}, {"rating", from_values<float>(ratings, {kRows})}};

  layers::set_random_seed(9);
  RetrievalModel fitted(kUsers, kMovies, 32);
  fitted.compile({.optimizer = optimizers::Adagrad(0.2)});
  fitted.fit(Tree(users), y, {.epochs = 2, .batch_size = kBatch, .verbose = 0, .shuffle = false});

  layers::set_random_seed(9);
  RetrievalModel by_hand(kUsers, kMovies, 32);
  optimizers::Adagrad adagrad(0.2);
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int64_t b = 0; b < kRows; b += kBatch) {
      const Tensor x = users.first_axis_slice(b, b + kBatch);
      const Tree yb{{"movie_id", y["movie_id"].tensor().first_axis_slice(b, b + kBatch)},
                    {"rating", y["rating"].tensor().first_axis_slice(b, b + kBatch)}};
      autograd::GradientTape tape;
      const Tensor loss = by_hand.compute_loss(Tree(x), yb, by_hand(Tree(x), /*training=*/true));
      const std::vector<autograd::Variable> variables = by_hand.trainable_weights();
      const std::vector<Tensor> sources(variables.begin(), variables.end());
      adagrad.apply_gradients(tape.gradient(loss, sources), variables);
    }
  }
  const auto a = fitted.trainable_weights(), b = by_hand.trainable_weights();
  ASSERT_EQ(a.size(), 2u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(std::memcmp(a[i].value().raw_data(), b[i].value().raw_data(), a[i].value().nbytes()), 0) << a[i].path();
  }
  // Rows no batch read are untouched.
  EXPECT_EQ(fitted.user_table().value().data<float>()[kUsers * 32 - 1],
            by_hand.user_table().value().data<float>()[kUsers * 32 - 1]);
}

TEST(RetrievalTutorialTest, EvaluationWithoutRetrievalGivesKerasValidationLoss) {
  backend::cpu::set_intra_op_threads(1);
  const Tensor users = from_values<int32_t>({1, 4, 2, 3, 0});
  const Tree y{{"movie_id", from_values<int32_t>({3, 11, 0, 5, 7})},
               {"rating", from_values<float>({0.0f, 0.5f, 1.0f, 0.25f, 0.75f})}};
  std::vector<double> losses;
  for (bool retrieve : {false, true}) {
    layers::set_random_seed(5);  // the same weights for both models
    RetrievalModel model(5, 12, 4, /*retrieve_in_evaluation=*/retrieve);
    model.compile({.optimizer = optimizers::Adagrad(0.2)});
    model.fit(Tree(users), y, {.epochs = 2, .batch_size = 2, .verbose = 0, .shuffle = false});
    losses.push_back(model.evaluate(Tree(users), y, {.batch_size = 2, .verbose = 0}).at("loss"));
  }
  EXPECT_EQ(losses[0], losses[1]);
  EXPECT_GT(losses[0], 0);
}

TEST(RetrievalTutorialTest, FiftyEpochsReachTheTutorialsValidationLoss) {
  auto dir = testing::shared_data_dir("ml-100k");
  if (!dir) GTEST_SKIP() << testing::shared_data_missing("ml-100k");
  // One intra-op thread: test suites run side by side on the 2 cores.
  backend::cpu::set_intra_op_threads(1);
  RetrievalTutorialOptions options{.data_dir = *dir, .verbose = 0, .sample_users = {793, 188}};
  RetrievalTutorialResult result = run_retrieval_tutorial(options);

  const std::vector<double>& loss = result.history.history.at("loss");
  const std::vector<double>& val_loss = result.history.history.at("val_loss");
  ASSERT_EQ(loss.size(), 50u);
  ASSERT_EQ(val_loss.size(), 10u);  // epochs 5, 10, ..., 50
  // The plateau: the scores start near 0 (embeddings in +-0.05), so the loss is about
  // the mean squared scaled rating for the first epochs (tutorial: 0.4772 ... 0.4769).
  for (int epoch = 0; epoch < 5; ++epoch) EXPECT_NEAR(loss[static_cast<size_t>(epoch)], 0.477, 0.01) << epoch;
  EXPECT_NEAR(val_loss[0], 0.48, 0.015);
  // Then the drop: steadily down from the plateau to the tutorial's final loss.
  EXPECT_LT(loss[49], loss[19]);
  EXPECT_LE(val_loss.back(), 0.20);
  EXPECT_LE(loss.back(), 0.20);

  ASSERT_EQ(result.recommendations.size(), 2u);
  EXPECT_EQ(result.recommendations[0].user_id, 793);
  for (const Recommendations& recs : result.recommendations) {
    ASSERT_EQ(recs.titles.size(), 10u);
    // The tutorial's lists are led by the most popular films.
    EXPECT_NE(std::find(recs.titles.begin(), recs.titles.end(), "Star Wars (1977)"), recs.titles.end());
  }
}

// --jit-compile (RunOptions::jit_compile): the training step compiles (its tables'
// gradients dense, which Adagrad applies as it does the sparse rows) and trains to the
// eager losses bit for bit, on 1 device and on 2 (each replica its own compiled step);
// retrieval's predict step (top_k) runs eagerly, saying so.
TEST(RetrievalTutorialTest, CompiledStepsTrainToTheEagerLosses) {
  auto dir = testing::shared_data_dir("ml-100k");
  if (!dir) GTEST_SKIP() << testing::shared_data_missing("ml-100k");
  backend::cpu::set_intra_op_threads(1);
  for (int devices : {1, 2}) {
    RetrievalTutorialOptions options{.data_dir = *dir, .epochs = 2, .verbose = 0, .sample_users = {793}};
    options.devices = devices;
    layers::Layer::reset_names();
    const RetrievalTutorialResult eager = run_retrieval_tutorial(options);
    layers::Layer::reset_names();  // the dumps' names: "retrieval_model" again
    options.run.jit_compile = true;
    const std::filesystem::path dump =
        std::filesystem::temp_directory_path() / ("retrieval-jit-" + std::to_string(::getpid()));
    ::setenv("CHORUS_JIT_DUMP", dump.c_str(), 1);
    ::testing::internal::CaptureStderr();
    const RetrievalTutorialResult compiled = run_retrieval_tutorial(options);
    const std::string warnings = ::testing::internal::GetCapturedStderr();
    ::unsetenv("CHORUS_JIT_DUMP");
    EXPECT_TRUE(std::filesystem::exists(dump / "retrieval_model_train_step.1.after.txt")) << devices;
    EXPECT_EQ(std::filesystem::exists(dump / "retrieval_model_replica_1_train_step.1.after.txt"), devices == 2);
    std::filesystem::remove_all(dump);
    EXPECT_EQ(compiled.history.history.at("loss"), eager.history.history.at("loss")) << devices;
    EXPECT_EQ(compiled.recommendations.at(0).titles, eager.recommendations.at(0).titles) << devices;
    EXPECT_EQ(warnings.find("train_step' runs eagerly"), std::string::npos) << warnings;
    EXPECT_NE(warnings.find("'retrieval_model_predict_step' runs eagerly"), std::string::npos) << warnings;
  }
}

TEST(RetrievalTutorialTest, TablesTooSmallForTheDataAreRefused) {
  auto dir = testing::shared_data_dir("ml-100k");
  if (!dir) GTEST_SKIP() << testing::shared_data_missing("ml-100k");
  RetrievalTutorialOptions options{.data_dir = *dir, .epochs = 1, .verbose = 0, .table_rows = 1000};
  EXPECT_THAT([&] { run_retrieval_tutorial(options); },
              ::testing::ThrowsMessage<ValueError>(::testing::HasSubstr(
                  "retrieval tutorial: table_rows 1000 is fewer than the data's ids need (1683)")));
}

// `chorus train movielens-retrieval` (the CLI built next to the test binary) runs the
// same tutorial and prints the tutorial's recommendations.
TEST(RetrievalTutorialTest, CliRecipe) {
  auto dir = testing::shared_data_dir("ml-100k");
  if (!dir) GTEST_SKIP() << testing::shared_data_missing("ml-100k");
  const std::filesystem::path binary = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "chorus";
  if (!std::filesystem::exists(binary)) GTEST_SKIP() << "the chorus CLI is not built: " << binary;
  auto run = [&](const std::string& arguments) {
    // One intra-op thread, as the other tests here.
    const std::string command = "OMP_NUM_THREADS=1 '" + binary.string() + "' " + arguments + " 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    std::string output;
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) output.append(buffer, n);
    const int status = ::pclose(pipe);
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, output);
  };
  auto [code, output] = run("train movielens-retrieval --data '" + *dir + "' --epochs 1 --verbose 2");
  EXPECT_EQ(code, 0) << output;
  EXPECT_NE(output.find("==Recommended movies for user 793=="), std::string::npos) << output;
  EXPECT_NE(output.find("loss: 0.47"), std::string::npos) << output;

  // --jit-compile reaches the model: its predict step (top_k) is traced and says it runs
  // eagerly; the train step compiles without a word.
  auto [jit_code, jit_output] =
      run("train movielens-retrieval --data '" + *dir + "' --epochs 1 --verbose 0 --jit-compile");
  EXPECT_EQ(jit_code, 0) << jit_output;
  EXPECT_NE(jit_output.find("'retrieval_model_predict_step' runs eagerly"), std::string::npos) << jit_output;
  EXPECT_EQ(jit_output.find("'retrieval_model_train_step' runs eagerly"), std::string::npos) << jit_output;

  auto [bad_code, bad_output] = run("train movielens-retrieval --data /nonexistent/ml-100k --epochs 1");
  EXPECT_EQ(bad_code, 1) << bad_output;
  EXPECT_NE(bad_output.find("u.data"), std::string::npos) << bad_output;

  // --timings writes the phases (bench/run_tutorials reads them).
  const std::filesystem::path timings = std::filesystem::temp_directory_path() / ("timings-" + std::to_string(::getpid()));
  auto [timed_code, timed_output] = run("train movielens-retrieval --data '" + *dir +
                                        "' --epochs 1 --validation-freq 1 --verbose 0 --timings '" + timings.string() + "'");
  ASSERT_EQ(timed_code, 0) << timed_output;
  std::ifstream in(timings);
  const nlohmann::json json = nlohmann::json::parse(in);
  std::filesystem::remove(timings);
  EXPECT_GT(json.at("validation_s").get<double>(), 0);
  EXPECT_GT(json.at("fit_s").get<double>(), json.at("validation_s").get<double>());
  EXPECT_GT(json.at("data_s").get<double>(), 0);
  EXPECT_GT(json.at("predict_s").get<double>(), 0);
  EXPECT_EQ(json.at("evaluate_s").get<double>(), 0);
  EXPECT_GT(json.at("recipe_end_unix_s").get<double>(), json.at("recipe_start_unix_s").get<double>());
}

// The phases a timed run adds up: each is inside the run, validation inside fit, with
// either kind of validation.
TEST(RetrievalTutorialTest, PhaseTimesSplitTheRun) {
  auto dir = testing::shared_data_dir("ml-100k");
  if (!dir) GTEST_SKIP() << testing::shared_data_missing("ml-100k");
  backend::cpu::set_intra_op_threads(1);
  PhaseTimes retrieving, loss_only;
  for (PhaseTimes* times : {&retrieving, &loss_only}) {
    const auto start = std::chrono::steady_clock::now();
    run_retrieval_tutorial({.data_dir = *dir, .epochs = 4, .validation_freq = 1, .verbose = 0,
                            .retrieve_in_validation = times == &retrieving, .timings = times});
    const double run = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GT(times->data_s, 0);
    EXPECT_GT(times->validation_s, 0);
    EXPECT_GT(times->fit_s, times->validation_s);
    EXPECT_GT(times->predict_s, 0);
    EXPECT_LT(times->data_s + times->fit_s + times->predict_s, run);
  }
}

}  // namespace
}  // namespace chorus::recipes
