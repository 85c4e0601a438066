// compile({.jit_compile = true}): the default train step runs as a compiled graph and
// trains to the eager weights bit for bit, Dropout included; what cannot be one graph runs
// eagerly with a warning; the setting survives save and load and can be changed after
// compile().
#include <filesystem>

#include <gtest/gtest.h>

#include "chorus/chorus.h"
#include "chorus/io/atomic_file.h"
#include "chorus/models/compare_weights.h"
#include "chorus/step/replica_context.h"
#include "tests/models/model_test_util.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"

namespace chorus::models {
namespace {

using namespace testing::test_names;
namespace fs = std::filesystem;

class JitCompileTest : public testing::TempDirTest {
 protected:
  // What the MLP has between its first two Dense layers.
  enum class Middle { kNothing, kDropout, kConcatenate, kBatchNormalization };

  // A small MLP from the same initial weights each time, trained for two epochs of 19
  // steps: 18 batches of 16 and a last one of 12 (a second signature).
  std::unique_ptr<Model> trained(bool jit, const std::string& optimizer, History* history,
                                 Middle middle = Middle::kNothing) {
    layers::Layer::reset_names();
    layers::set_random_seed(7);
    Tensor x = layers::Input({4});
    Tensor h = layers::Dense(16, {.activation = "relu"})(x);
    if (middle == Middle::kDropout) h = layers::Dropout(0.5)(h);
    if (middle == Middle::kBatchNormalization) h = layers::BatchNormalization()(h);
    if (middle == Middle::kConcatenate) h = layers::Concatenate({.axis = 1})(Tree::list({h, h})).tensor();
    h = layers::Dense(16, {.activation = "gelu"})(h);
    auto model = std::make_unique<Model>(x, layers::Dense(3)(h));
    model->compile({.optimizer = optimizer,
                    .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    .metrics = {"accuracy"},
                    .jit_compile = jit});
    const testing::Blobs data = testing::separable_blobs(300, 3);
    *history = model->fit(data.x, data.y, {.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false});
    return model;
  }

  int dumped(const std::string& suffix) const {
    int n = 0;
    for (const auto& entry : fs::directory_iterator(dir_)) n += entry.path().string().ends_with(suffix);
    return n;
  }
};

TEST_F(JitCompileTest, TheCompiledTrainStepTrainsToTheEagerWeightsBitForBit) {
  for (const std::string optimizer : {"adam", "sgd", "rmsprop"}) {
    History eager_history, jit_history;
    auto eager = trained(false, optimizer, &eager_history);
    ::setenv("CHORUS_JIT_DUMP", dir().c_str(), 1);
    ::testing::internal::CaptureStderr();
    auto compiled = trained(true, optimizer, &jit_history);
    const std::string warnings = ::testing::internal::GetCapturedStderr();
    ::unsetenv("CHORUS_JIT_DUMP");
    EXPECT_EQ(warnings, "") << optimizer;
    EXPECT_EQ(jit_history.history.at("loss"), eager_history.history.at("loss")) << optimizer;
    EXPECT_EQ(jit_history.history.at("accuracy"), eager_history.history.at("accuracy")) << optimizer;
    EXPECT_EQ(max_relative_difference(compiled->weights(), eager->weights()), 0.0) << optimizer;
    // Traced once per batch shape (16 and the last 12), not once per step or epoch.
    EXPECT_EQ(dumped("_train_step.1.after.txt"), 1) << optimizer;
    EXPECT_EQ(dumped("_train_step.2.after.txt"), 1) << optimizer;
    EXPECT_EQ(dumped("_train_step.3.after.txt"), 0) << optimizer;
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
}

// Dropout's mask is a node of the compiled step that draws the next call's mask at every
// run: the same masks as eagerly, so the same weights.
TEST_F(JitCompileTest, DropoutDrawsEachStepsMaskAsTheEagerStepDoes) {
  History eager_history, jit_history;
  auto eager = trained(false, "adam", &eager_history, Middle::kDropout);
  ::testing::internal::CaptureStderr();
  auto compiled = trained(true, "adam", &jit_history, Middle::kDropout);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(jit_history.history.at("loss"), eager_history.history.at("loss"));
  EXPECT_EQ(max_relative_difference(compiled->weights(), eager->weights()), 0.0);
}

// BatchNormalization's moving statistics are a host node of the compiled step, assigned at
// every run: the step compiles (no warning) and trains them to the eager values.
TEST_F(JitCompileTest, BatchNormalizationsStatisticsFollowEveryCompiledStep) {
  History eager_history, jit_history;
  auto eager = trained(false, "adam", &eager_history, Middle::kBatchNormalization);
  ::testing::internal::CaptureStderr();
  auto compiled = trained(true, "adam", &jit_history, Middle::kBatchNormalization);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(jit_history.history.at("loss"), eager_history.history.at("loss"));
  EXPECT_EQ(max_relative_difference(compiled->weights(), eager->weights()), 0.0);
}

// Data parallelism on 2 replicas: each runs a compiled step of its own, the gradients'
// reduction streaming from nodes of it, and trains to the eager weights bit for bit —
// Dropout's masks, BatchNormalization's averaged statistics and an uneven last batch
// (replica 0 keeps its slice's shape but weighs 8 rows of 15, not of 16) included.
TEST_F(JitCompileTest, DataParallelReplicasTrainEvaluateAndPredictAsTheEagerOnes) {
  std::unique_ptr<Model> models[2];
  History histories[2];
  Logs evaluations[2];
  Tensor predictions[2];
  std::string warnings;
  const testing::Blobs data = testing::separable_blobs(159, 3);  // 9 batches of 16, one of 15
  for (bool jit : {false, true}) {
    layers::Layer::reset_names();
    layers::set_random_seed(7);
    distribution::set_distribution(
        std::make_shared<distribution::DataParallel>(std::vector<Device>{Device::cpu(0), Device::cpu(1)}));
    Tensor x = layers::Input({4});
    Tensor h = layers::BatchNormalization()(layers::Dense(16, {.activation = "relu"})(x));
    h = layers::Dense(16, {.activation = "gelu"})(layers::Dropout(0.3)(h));
    auto& model = models[jit] = std::make_unique<Model>(x, layers::Dense(3)(h));
    model->compile({.optimizer = "adam",
                    .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    .metrics = {"accuracy"},
                    .jit_compile = jit});
    distribution::set_distribution(nullptr);
    if (jit) ::setenv("CHORUS_JIT_DUMP", dir().c_str(), 1);
    ::testing::internal::CaptureStderr();
    histories[jit] = model->fit(data.x, data.y, {.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false});
    evaluations[jit] = model->evaluate(data.x, data.y, {.batch_size = 16, .verbose = 0});
    predictions[jit] = model->predict(data.x, {.batch_size = 16}).tensor();
    warnings += ::testing::internal::GetCapturedStderr();
    ::unsetenv("CHORUS_JIT_DUMP");
  }
  EXPECT_EQ(warnings, "");
  EXPECT_EQ(histories[1].history.at("loss"), histories[0].history.at("loss"));
  EXPECT_EQ(histories[1].history.at("accuracy"), histories[0].history.at("accuracy"));
  EXPECT_EQ(max_relative_difference(models[1]->weights(), models[0]->weights()), 0.0);
  EXPECT_EQ(std::vector<Logs::Entry>(evaluations[1].begin(), evaluations[1].end()),
            std::vector<Logs::Entry>(evaluations[0].begin(), evaluations[0].end()));
  EXPECT_TRUE(testing::same_bits(predictions[1], predictions[0]));
  // Both replicas compiled their steps (slices of 8, then 8 and 7), the reduction inside.
  const std::string name = models[1]->name();
  for (const std::string step : {"_train_step", "_replica_1_train_step"}) {
    const fs::path graph = dir_ / (name + step + ".1.after.txt");
    ASSERT_TRUE(fs::exists(graph)) << graph;
    const std::string text = io::read_file(graph);
    for (const char* node : {"begin_gradient_reduction", "reduce_gradient", "apply_gradients",
                             "update_moving_statistics", "dropout_mask"}) {
      EXPECT_NE(text.find(node), std::string::npos) << step << " has no " << node;
    }
    // Each node launched inside a layer's call names the layer (CHORUS_JIT_DUMP's text).
    const size_t line = text.find("update_moving_statistics(");
    ASSERT_NE(line, std::string::npos);
    EXPECT_EQ(text.substr(line, text.find('\n', line) - line).ends_with("  # batch_normalization"), true)
        << text.substr(line, text.find('\n', line) - line);
  }
  EXPECT_EQ(dumped("_replica_1_train_step.2.after.txt"), 1);
  EXPECT_EQ(dumped("_replica_1_test_step.1.after.txt"), 1);
  EXPECT_EQ(dumped("_replica_1_predict_step.1.after.txt"), 1);
}

// A layer that offers its replica a statistic straight from its call, not from a host
// node: a compiled replay would skip it, so the step refuses to compile and runs eagerly,
// saying why and where, with the eager values.
class BatchMean : public layers::Layer {
 public:
  BatchMean() : Layer("BatchMean", "batch_mean") {}
  void build(const Tree& inputs) override {
    mean = add_weight("mean", Shape{inputs.tensor().dim(1)}, "zeros", /*trainable=*/false);
  }
  Tree call(const Tree& inputs, bool) override {
    if (auto* replica = step::ReplicaContext::current()) replica->assign_mean(mean, ops::mean(inputs.tensor(), {0}));
    return inputs;
  }
  Variable mean;
};

TEST_F(JitCompileTest, AReplicaAssignOutsideAHostNodeRunsEagerlyNamingIt) {
  Tensor means[2];
  std::string warnings;
  for (bool jit : {false, true}) {
    layers::Layer::reset_names();
    layers::set_random_seed(7);
    distribution::set_distribution(
        std::make_shared<distribution::DataParallel>(std::vector<Device>{Device::cpu(0), Device::cpu(1)}));
    Tensor x = layers::Input({4});
    auto batch_mean = std::make_shared<BatchMean>();
    auto model = std::make_unique<Model>(x, layers::Dense(3)((*batch_mean)(x)));
    model->compile({.optimizer = "sgd", .loss = "mse", .jit_compile = jit});
    distribution::set_distribution(nullptr);
    const testing::Blobs data = testing::separable_blobs(64, 3);
    ::testing::internal::CaptureStderr();
    model->fit(data.x, zeros({64, 3}), {.epochs = 1, .batch_size = 16, .verbose = 0, .shuffle = false});
    warnings += ::testing::internal::GetCapturedStderr();
    means[jit] = batch_mean->mean.value();
  }
  EXPECT_NE(warnings.find("runs eagerly for these argument shapes: in layer 'batch_mean': ReplicaContext::assign_mean "
                          "outside a host node has no compiled form"),
            std::string::npos)
      << warnings;
  EXPECT_TRUE(testing::same_bits(means[1], means[0]));
}

// Steps on a device mesh (ModelParallel) are not compiled yet: they run eagerly, train as without jit, and
// say so once.
TEST_F(JitCompileTest, StepsUnderModelParallelRunEagerlyAndSaySo) {
  History histories[2];
  std::string warnings, name;
  for (bool jit : {false, true}) {
    layers::Layer::reset_names();
    layers::set_random_seed(7);
    distribution::LayoutMap layout_map(
        distribution::DeviceMesh({1, 2}, {"batch", "model"}, {Device::cpu(0), Device::cpu(1)}));
    layout_map["hidden/kernel"] = {std::nullopt, "model"};
    distribution::set_distribution(std::make_shared<distribution::ModelParallel>(
        layout_map, distribution::ModelParallelOptions{.batch_dim_name = "batch"}));
    Tensor x = layers::Input({4});
    auto model = std::make_unique<Model>(
        x, layers::Dense(3)(layers::Dense(16, {.activation = "relu", .name = "hidden"})(x)));
    model->compile({.optimizer = "adam",
                    .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    .jit_compile = jit});
    distribution::set_distribution(nullptr);
    name = model->name();
    const testing::Blobs data = testing::separable_blobs(64, 3);
    ::testing::internal::CaptureStderr();
    histories[jit] = model->fit(data.x, data.y, {.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false});
    warnings += ::testing::internal::GetCapturedStderr();
  }
  EXPECT_EQ(warnings, "chorus: warning: " + name +
                          ": jit_compile: steps on a device mesh (ModelParallel, a sharding DataParallel) run eagerly "
                          "for now\n");
  EXPECT_EQ(histories[1].history.at("loss"), histories[0].history.at("loss"));
}

TEST_F(JitCompileTest, AStepThatCannotBeOneGraphRunsEagerlyWithAWarning) {
  History eager_history, jit_history;
  trained(false, "adam", &eager_history, Middle::kConcatenate);
  ::testing::internal::CaptureStderr();
  trained(true, "adam", &jit_history, Middle::kConcatenate);
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  // Named with the layers: where the trace failed, and where the op with no compiled form ran.
  EXPECT_NE(warnings.find("runs eagerly for these argument shapes: in layer 'dense_1': 'matmul' reads input 0 ((16, "
                          "32) float32), which no traced kernel wrote: an op with no compiled form made it in layer "
                          "'concatenate'\n"),
            std::string::npos)
      << warnings;
  EXPECT_EQ(jit_history.history.at("loss"), eager_history.history.at("loss"));
}

// An Embedding's index check is a node of the compiled step: a bad index in a later batch
// still gets the layer's own error, not a wrong row.
TEST_F(JitCompileTest, ACompiledEmbeddingStillNamesAnIndexOutOfRange) {
  layers::Layer::reset_names();
  Tensor ids = layers::Input({2}, kInt32);
  Tensor h = layers::Embedding(10, 4, {.name = "lookup"})(ids);
  auto model = std::make_unique<Model>(ids, layers::Dense(1)(layers::Flatten()(h)));
  model->compile({.optimizer = "sgd", .loss = "mse", .jit_compile = true});
  const Tensor x = from_values<int32_t>({1, 2, 3, 4, 5, 6, 7, 12}, {4, 2}), y = zeros({4, 1});
  try {
    model->fit(x, y, {.epochs = 1, .batch_size = 2, .verbose = 0, .shuffle = false});
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_STREQ(e.what(), "lookup: index 12 out of range [0, 10) in batch element 1");
  }
}

TEST_F(JitCompileTest, CompiledEvaluateAndPredictEqualTheEagerOnes) {
  History history;
  auto model = trained(false, "adam", &history);
  const testing::Blobs data = testing::separable_blobs(100, 5);
  const Logs eager_logs = model->evaluate(data.x, data.y, {.batch_size = 16, .verbose = 0});
  const Tensor eager_predictions = model->predict(data.x, {.batch_size = 16}).tensor();
  models::CompileOptions options = model->compile_options();
  options.jit_compile = true;
  model->compile(options);
  ::setenv("CHORUS_JIT_DUMP", dir().c_str(), 1);
  for (int i = 0; i < 2; ++i) {  // the second time from the compiled graphs
    const Logs logs = model->evaluate(data.x, data.y, {.batch_size = 16, .verbose = 0});
    EXPECT_EQ(std::vector<Logs::Entry>(logs.begin(), logs.end()),
              std::vector<Logs::Entry>(eager_logs.begin(), eager_logs.end()));
    EXPECT_TRUE(testing::same_bits(model->predict(data.x, {.batch_size = 16}).tensor(), eager_predictions));
  }
  ::unsetenv("CHORUS_JIT_DUMP");
  EXPECT_EQ(dumped("_test_step.1.after.txt"), 1);
  EXPECT_EQ(dumped("_predict_step.2.after.txt"), 1);  // batches of 16 and a last one of 4
}

TEST_F(JitCompileTest, SaveAndLoadKeepJitCompile) {
  History history;
  auto model = trained(true, "adam", &history);
  model->save(dir_ / "model");
  EXPECT_TRUE(load_model(dir_ / "model")->jit_compile());
}

// Keras's model.jit_compile = True after compile(): the next steps are compiled, and
// setting it back to false runs them eagerly again.
TEST_F(JitCompileTest, SettingJitCompileAfterCompileTakesEffectAtTheNextStep) {
  History history;
  auto model = trained(false, "adam", &history);
  const testing::Blobs data = testing::separable_blobs(32, 5);
  ::setenv("CHORUS_JIT_DUMP", dir().c_str(), 1);
  model->set_jit_compile(true);
  EXPECT_TRUE(model->jit_compile());
  model->evaluate(data.x, data.y, {.batch_size = 16, .verbose = 0});
  EXPECT_EQ(dumped("_test_step.1.after.txt"), 1);
  model->set_jit_compile(false);
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  model->evaluate(data.x, data.y, {.batch_size = 16, .verbose = 0});
  ::unsetenv("CHORUS_JIT_DUMP");
  EXPECT_EQ(dumped(".after.txt"), 0);
}

}  // namespace
}  // namespace chorus::models
