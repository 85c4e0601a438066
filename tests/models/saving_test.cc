#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/chorus.h"
#include "tests/models/model_test_util.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_util.h"

namespace chorus::models {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

class SavingTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    layers::Layer::reset_names();
    layers::set_random_seed(11);
  }
  std::filesystem::path root() const { return dir(); }
  CompileOptions options() {
    return {.optimizer = optimizers::Adam(0.01), .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
            .metrics = {metrics::SparseCategoricalAccuracy()}};
  }
};

TEST_F(SavingTest, SaveThenLoadModelIsBitExact) {
  auto model = testing::small_mlp();
  model->compile(options());
  auto data = testing::separable_blobs(64, 1);
  model->fit(data.x, data.y, {.batch_size = 16, .verbose = 0});
  model->save(root() / "ckpt-1.keras");

  auto restored = load_model(root() / "ckpt-1.keras");
  auto a = model->weights(), b = restored->weights();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].path(), b[i].path());
    EXPECT_TRUE(testing::same_bits(a[i].value(), b[i].value())) << a[i].path();
  }
  EXPECT_TRUE(testing::same_bits((*model)(data.x), (*restored)(data.x)));
  EXPECT_EQ(restored->optimizer().iterations(), 4);
  EXPECT_EQ(restored->optimizer().class_name(), "Adam");
  EXPECT_EQ(restored->metrics()[1]->name(), "sparse_categorical_accuracy");
}

TEST_F(SavingTest, ResumingFromACheckpointEqualsUninterruptedTraining) {
  auto data = testing::separable_blobs(96, 2);
  auto uninterrupted = testing::small_mlp();
  uninterrupted->compile(options());
  auto start = root() / "start";
  uninterrupted->save(start);
  uninterrupted->fit(data.x, data.y, {.epochs = 3, .batch_size = 16, .verbose = 0, .shuffle = false});

  auto first = load_model(start);
  first->fit(data.x, data.y, {.epochs = 1, .batch_size = 16, .verbose = 0, .shuffle = false});
  first->save(root() / "ckpt-1");
  auto resumed = load_model(root() / "ckpt-1");
  resumed->fit(data.x, data.y, {.epochs = 3, .batch_size = 16, .verbose = 0, .shuffle = false, .initial_epoch = 1});

  auto a = uninterrupted->weights(), b = resumed->weights();
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(testing::same_bits(a[i].value(), b[i].value())) << a[i].path();
  auto sa = uninterrupted->optimizer().variables(), sb = resumed->optimizer().variables();
  ASSERT_EQ(sa.size(), sb.size());
  ASSERT_EQ(sa.size(), 1 + 2 * a.size());  // iterations, then Adam's two moments per weight
  for (size_t i = 0; i < sa.size(); ++i) EXPECT_TRUE(testing::same_bits(sa[i].value(), sb[i].value())) << sa[i].path();
}

TEST_F(SavingTest, WeightsRoundTripAndMismatchListsEveryDifference) {
  auto model = testing::small_mlp(4, 8, 3);
  model->save_weights(root() / "w.weights.safetensors");
  auto same = testing::small_mlp(4, 8, 3);  // dense_2, dense_3: other names
  EXPECT_THAT([&] { same->load_weights(root() / "w.weights.safetensors"); },
              ThrowsMessage<ValueError>(HasSubstr("missing from the file: dense_2/kernel, dense_2/bias, dense_3/kernel")));

  layers::Layer::reset_names();
  auto other = testing::small_mlp(4, 5, 3);
  EXPECT_THAT([&] { other->load_weights(root() / "w.weights.safetensors"); },
              ThrowsMessage<ValueError>(HasSubstr("mismatched: dense/kernel (file (4, 8) float32, model 'functional' (4, 5) float32)")));

  layers::Layer::reset_names();
  auto twin = testing::small_mlp(4, 8, 3);
  twin->load_weights(root() / "w.weights.safetensors");
  Tensor x = testing::random_tensor({3, 4}, 2);
  EXPECT_TRUE(testing::same_bits((*model)(x), (*twin)(x)));
}

TEST_F(SavingTest, SequentialRoundTrip) {
  Sequential seq({layers::InputLayer({4}), layers::Dense(8, {.activation = "relu"}), layers::Dropout(0.5), layers::Dense(3)});
  seq.save(root() / "seq");
  auto restored = load_model(root() / "seq");
  EXPECT_EQ(restored->class_name(), "Sequential");
  Tensor x = testing::random_tensor({3, 4}, 2);
  EXPECT_TRUE(testing::same_bits(seq(x), (*restored)(x)));
}

TEST_F(SavingTest, SubclassedModelsCannotBeRebuiltFromConfig) {
  class Tiny : public Model {
   public:
    Tiny() : dense_(add<layers::Dense>(2)) {}
    Tree call(const Tree& x, bool) override { return (*dense_)(x.tensor()); }

   private:
    layers::Dense* dense_;
  };
  Tiny tiny;
  tiny(testing::random_tensor({1, 3}, 1));
  tiny.save(root() / "tiny");
  EXPECT_THAT([&] { load_model(root() / "tiny"); }, ThrowsMessage<ValueError>(HasSubstr("call load_weights")));
  Tiny again;
  again(testing::random_tensor({1, 3}, 1));
  EXPECT_THAT([&] { again.load_weights(root() / "tiny"); }, ThrowsMessage<ValueError>(HasSubstr("dense_1/kernel")));
}

TEST_F(SavingTest, LoadModelOfAMissingOrCorruptDirectoryIsAnIOError) {
  EXPECT_THAT([&] { load_model(root() / "nope"); }, ThrowsMessage<IOError>(HasSubstr("nope is not a saved model directory")));
  std::filesystem::create_directories(root() / "bad");
  std::ofstream(root() / "bad/config.json") << "{not json";
  EXPECT_THAT([&] { load_model(root() / "bad"); }, ThrowsMessage<IOError>(HasSubstr("config.json: not valid JSON")));
}

}  // namespace
}  // namespace chorus::models
