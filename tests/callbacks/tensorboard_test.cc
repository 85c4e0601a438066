#include "chorus/callbacks/tensorboard.h"

#include <cstdlib>
#include <fstream>
#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/callbacks/callbacks.h"
#include "chorus/core/error.h"
#include "tests/callbacks/callback_test_util.h"
#include "tests/testing/event_records.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"

namespace chorus::callbacks {
namespace {

namespace fs = std::filesystem;
using namespace testing::test_names;
using testing::Scalar;

std::unique_ptr<models::Model> model_with_metric(double learning_rate) {
  Tensor x = layers::Input({3});
  Tensor y = layers::Dense(1)(x);
  auto model = std::make_unique<models::Model>(x, y);
  model->compile({.optimizer = optimizers::SGD(learning_rate), .loss = "mse", .metrics = {"mae"}});
  return model;
}

// What a fit reported, from the History and from batch logs, to compare with the files.
struct Reported {
  std::vector<std::string> names;  // the epoch logs' names in order, without val_ ones
  std::vector<std::vector<std::pair<std::string, double>>> batch_logs;  // per global batch, 1-based
  std::vector<double> learning_rates;  // per epoch, at its end
  std::vector<int64_t> iterations;     // per epoch, at its end
  models::History history;
};

Reported fit_with(models::Model& model, const testing::LinearData& data, TensorBoard tensorboard, int epochs) {
  Reported r;
  LambdaCallback recorder({
      .on_epoch_end =
          [&](int /*epoch*/, const models::Logs& logs) {
            r.names.clear();
            for (const auto& [name, value] : logs) {
              if (!name.starts_with("val_")) r.names.push_back(name);
            }
            r.learning_rates.push_back(model.optimizer().learning_rate());
            r.iterations.push_back(model.optimizer().iterations());
          },
      .on_train_batch_end =
          [&](int64_t /*batch*/, const models::Logs& logs) { r.batch_logs.emplace_back(logs.begin(), logs.end()); },
  });
  r.history = model.fit(data.x, data.y,
                        {.epochs = epochs, .batch_size = 2, .verbose = 0,
                         .callbacks = {std::move(recorder), std::move(tensorboard),
                                       LearningRateScheduler([](int epoch, double lr) { return epoch == 0 ? lr : lr / 2; })},
                         .validation_split = 0.25, .shuffle = false});
  return r;
}

class TensorBoardTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    layers::Layer::reset_names();
    layers::set_random_seed(5);
  }
  fs::path log_dir() const { return dir_ / "logs"; }
  testing::LinearData data_ = testing::linear_data(8, 13);  // 6 training rows (3 batches), 2 validation rows
};

// log_dir/train: epoch_<name> for every training log, then epoch_learning_rate, at step =
// epoch, with the History's values (as float32). log_dir/validation: each evaluation's
// evaluation_<name>_vs_iterations at the optimizer's step count, then epoch_<name>.
TEST_F(TensorBoardTest, FitWritesEpochScalarsForTrainingAndValidation) {
  auto model = model_with_metric(0.05);
  const Reported r = fit_with(*model, data_, TensorBoard(log_dir().string()), 3);
  ASSERT_EQ(r.names, (std::vector<std::string>{"loss", "mae"}));  // Keras names a metric by its string

  const fs::path train_file = testing::the_events_file(log_dir() / "train");
  const fs::path val_file = testing::the_events_file(log_dir() / "validation");
  const std::regex name(R"(events\.out\.tfevents\.\d{10}\..+\.\d+\.\d+\.v2)");
  EXPECT_TRUE(std::regex_match(train_file.filename().string(), name)) << train_file;
  EXPECT_TRUE(std::regex_match(val_file.filename().string(), name)) << val_file;

  std::vector<Scalar> train, val;
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (const std::string& n : r.names) {
      train.push_back({"epoch_" + n, epoch, static_cast<float>(r.history.history.at(n)[epoch])});
    }
    train.push_back({"epoch_learning_rate", epoch, static_cast<float>(r.learning_rates[epoch])});
    for (const std::string& n : r.names) {
      val.push_back({"evaluation_" + n + "_vs_iterations", r.iterations[epoch],
                     static_cast<float>(r.history.history.at("val_" + n)[epoch])});
    }
    for (const std::string& n : r.names) {
      val.push_back({"epoch_" + n, epoch, static_cast<float>(r.history.history.at("val_" + n)[epoch])});
    }
  }
  EXPECT_EQ(r.learning_rates, (std::vector<double>{0.05, 0.025, 0.0125}));
  EXPECT_EQ(r.iterations, (std::vector<int64_t>{3, 6, 9}));
  for (const fs::path& file : {train_file, val_file}) {
    const auto events = testing::read_events(file);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events[0].file_version(), "brain.Event:2") << file;
  }
  EXPECT_EQ(testing::scalars(testing::read_events(train_file)), train);
  EXPECT_EQ(testing::scalars(testing::read_events(val_file)), val);
}

// update_freq = 2: batch_<name> after global batches 2, 4, 6 (3 batches an epoch, counted
// across epochs), with the batch logs' values.
TEST_F(TensorBoardTest, UpdateFreqWritesBatchScalarsEveryNBatches) {
  auto model = model_with_metric(0.05);
  const Reported r = fit_with(*model, data_, TensorBoard(log_dir().string(), {.update_freq = 2}), 2);
  ASSERT_EQ(r.batch_logs.size(), 6u);
  std::vector<Scalar> expected;
  for (int64_t step = 2; step <= 6; step += 2) {
    for (const auto& [n, value] : r.batch_logs[step - 1]) expected.push_back({"batch_" + n, step, static_cast<float>(value)});
  }
  std::vector<Scalar> batch;
  for (const Scalar& s : testing::scalars(testing::read_events(testing::the_events_file(log_dir() / "train")))) {
    if (s.tag.starts_with("batch_")) batch.push_back(s);
  }
  EXPECT_EQ(batch, expected);
  ASSERT_EQ(expected.size(), 6u);  // loss and mae, 3 times
}

// Keras's "batch" is update_freq 1: every batch.
TEST_F(TensorBoardTest, UpdateFreqOneWritesEveryBatch) {
  auto model = model_with_metric(0.05);
  fit_with(*model, data_, TensorBoard(log_dir().string(), {.update_freq = 1}), 1);
  int64_t batch_losses = 0;
  for (const Scalar& s : testing::scalars(testing::read_events(testing::the_events_file(log_dir() / "train")))) {
    if (s.tag == "batch_loss") {
      EXPECT_EQ(s.step, ++batch_losses);
    }
  }
  EXPECT_EQ(batch_losses, 3);
}

// Each fit opens new files; without validation no validation directory appears.
TEST_F(TensorBoardTest, EachFitOpensNewFiles) {
  auto model = model_with_metric(0.05);
  auto tensorboard = std::make_shared<TensorBoard>(log_dir().string());
  for (int i = 0; i < 2; ++i) model->fit(data_.x, data_.y, {.epochs = 1, .verbose = 0, .callbacks = {tensorboard}});
  int files = 0;
  for (const auto& entry : fs::directory_iterator(log_dir() / "train")) {
    ++files;
    EXPECT_EQ(testing::scalars(testing::read_events(entry.path())).size(), 3u) << entry.path();
  }
  EXPECT_EQ(files, 2);
  EXPECT_FALSE(fs::exists(log_dir() / "validation"));
}

TEST_F(TensorBoardTest, EvaluateWritesEvaluationScalars) {
  auto model = model_with_metric(0.05);
  auto tensorboard = std::make_shared<TensorBoard>(log_dir().string());
  const models::Logs logs = model->evaluate(data_.x, data_.y, {.verbose = 0, .callbacks = {tensorboard}});
  tensorboard.reset();  // closes the file
  const std::vector<Scalar> written = testing::scalars(testing::read_events(testing::the_events_file(log_dir() / "validation")));
  EXPECT_EQ(written, (std::vector<Scalar>{{"evaluation_loss_vs_iterations", 0, static_cast<float>(logs["loss"])},
                                          {"evaluation_mae_vs_iterations", 0,
                                           static_cast<float>(logs["mae"])}}));
}

TEST_F(TensorBoardTest, BadArgumentsNameThemselves) {
  EXPECT_THAT([] { TensorBoard("logs", {.update_freq = 0}); },
              ThrowsMessage<ValueError>(HasSubstr("TensorBoard: expected update_freq >= 1 (a number of batches; nullopt "
                                                  "for once an epoch). Received: update_freq=0")));
  EXPECT_THAT([] { TensorBoard("logs", {.update_freq = -3}); }, ThrowsMessage<ValueError>(HasSubstr("update_freq=-3")));
  EXPECT_THAT([] { TensorBoard(""); }, ThrowsMessage<ValueError>(HasSubstr("Received: log_dir=\"\"")));
  EXPECT_EQ(TensorBoard().log_dir(), "logs");  // Keras's default
}

// A log_dir below a regular file cannot be created (whoever runs the test, root included):
// fit fails before the first step, naming the directory.
TEST_F(TensorBoardTest, UnwritableLogDirFailsAtTrainBegin) {
  write("not_a_dir", "");
  auto model = model_with_metric(0.05);
  const fs::path bad = dir_ / "not_a_dir" / "logs";
  EXPECT_THAT([&] { model->fit(data_.x, data_.y, {.epochs = 1, .verbose = 0, .callbacks = {TensorBoard(bad.string())}}); },
              ThrowsMessage<IOError>(HasSubstr("cannot create log directory " + (bad / "train").string())));
  EXPECT_EQ(model->optimizer().iterations(), 0);
}

// For scripts/tensorboard-check: fits into $CHORUS_TENSORBOARD_CHECK_DIR/logs and writes
// what chorus reported to expected.txt as "<run> <tag> <step> <value>" lines (the value as
// the float32 TensorBoard stores, printed as the double it widens to), for an independent
// reader to compare with. Skipped otherwise.
TEST(TensorBoardExternalCheck, WritesLogsAndTheValuesChorusReported) {
  const char* out = std::getenv("CHORUS_TENSORBOARD_CHECK_DIR");
  if (out == nullptr) GTEST_SKIP() << "set CHORUS_TENSORBOARD_CHECK_DIR (scripts/tensorboard-check does)";
  layers::Layer::reset_names();
  layers::set_random_seed(7);
  const fs::path dir(out);
  fs::remove_all(dir / "logs");
  auto model = model_with_metric(0.05);
  const Reported r = fit_with(*model, testing::linear_data(8, 17), TensorBoard((dir / "logs").string(), {.update_freq = 2}), 3);
  std::ofstream expected(dir / "expected.txt");
  auto line = [&](const char* run, const std::string& tag, int64_t step, double value) {
    expected << fmt::format("{} {} {} {}\n", run, tag, step, static_cast<double>(static_cast<float>(value)));
  };
  for (size_t b = 2; b <= r.batch_logs.size(); b += 2) {
    for (const auto& [n, value] : r.batch_logs[b - 1]) line("train", "batch_" + n, static_cast<int64_t>(b), value);
  }
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (const std::string& n : r.names) line("train", "epoch_" + n, epoch, r.history.history.at(n)[epoch]);
    line("train", "epoch_learning_rate", epoch, r.learning_rates[epoch]);
    for (const std::string& n : r.names) {
      line("validation", "evaluation_" + n + "_vs_iterations", r.iterations[epoch], r.history.history.at("val_" + n)[epoch]);
      line("validation", "epoch_" + n, epoch, r.history.history.at("val_" + n)[epoch]);
    }
  }
  ASSERT_TRUE(expected.good());
}

}  // namespace
}  // namespace chorus::callbacks
