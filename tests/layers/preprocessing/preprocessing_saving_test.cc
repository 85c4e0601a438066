// The preprocessing layers inside functional models: save / load_model round trips that
// restore vocabularies (from the config) and learned statistics (from the weights), and
// training on string inputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/chorus.h"
#include "tests/layers/preprocessing/preprocessing_test_util.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_util.h"

namespace chorus::layers {
namespace {

using namespace testing::preprocessing_test_names;

class PreprocessingSavingTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    Layer::reset_names();
    set_random_seed(3);
  }

  // Saves `model`, loads it back, and checks that it computes the same outputs on `x`.
  std::unique_ptr<models::Model> round_trip(models::Model& model, const Tensor& x) {
    const Tensor before = model(x);
    model.save(dir_ / "model.keras");
    auto loaded = load_model(dir_ / "model.keras");
    EXPECT_TRUE(testing::tensors_near((*loaded)(x), before, 0, 0));
    return loaded;
  }

  template <class L>
  static const L& find_layer(const models::Model& model) {
    for (const Layer* layer : model.layers()) {
      if (const auto* found = dynamic_cast<const L*>(layer)) return *found;
    }
    throw Error("no such layer in the model");
  }
};

TEST_F(PreprocessingSavingTest, AdaptedStringLookup) {
  StringLookup lookup({.mask_token = ""});
  lookup.adapt(strings(Shape{3, 2}, {"red", "blue", "red", "", "green", "red"}));
  auto inputs = Input({2}, kString);
  auto x = Flatten()(Embedding(5, 3)(lookup(inputs)));
  Model model(inputs, Dense(2)(x));
  auto loaded = round_trip(model, strings(Shape{3, 2}, {"red", "green", "", "blue", "pink", "red"}));
  EXPECT_EQ(find_layer<StringLookup>(*loaded).get_vocabulary(),
            (std::vector<std::string>{"", "[UNK]", "red", "green", "blue"}));
}

TEST_F(PreprocessingSavingTest, IntegerLookupTfIdfAndHashing) {
  IntegerLookup lookup({.output_mode = OutputMode::kTfIdf});
  lookup.adapt(testing::ints(Shape{3, 2}, {4, 8, 4, 15, 16, 4}));
  auto ids = Input({2}, kInt64);
  auto words = Input({2}, kString);
  auto hashed = Flatten()(Embedding(4, 2)(Hashing(4, {.salt = text::SipHashKey{7, 9}})(words)));
  auto merged = Concatenate()(Tree::list({lookup(ids), hashed}));
  Model model(Tree::list({ids, words}), Dense(1)(merged));
  const Tree x = Tree::list({testing::ints(Shape{2, 2}, {4, 99, 16, 16}), strings(Shape{2, 2}, {"a", "b", "c", "a"})});
  const Tensor before = model(x).tensor();
  model.save(dir_ / "model.keras");
  auto loaded = load_model(dir_ / "model.keras");
  EXPECT_TRUE(testing::tensors_near((*loaded)(x).tensor(), before, 0, 0));
  const auto& restored = find_layer<IntegerLookup>(*loaded);
  EXPECT_EQ(restored.get_vocabulary(), lookup.get_vocabulary());
  EXPECT_EQ(restored.idf_weights(), lookup.idf_weights());
}

TEST_F(PreprocessingSavingTest, AdaptedNormalizationStatisticsAreWeights) {
  Normalization norm;
  norm.adapt(from_values({1.f, 10.f, 3.f, 30.f, 5.f, 50.f}, Shape{3, 2}));
  auto inputs = Input({2});
  Model model(inputs, Dense(1)(norm(inputs)));
  auto loaded = round_trip(model, from_values({2.f, 20.f, 0.f, 0.f}, Shape{2, 2}));
  const auto& restored = find_layer<Normalization>(*loaded);
  EXPECT_EQ(restored.mean().to_vector<float>(), (std::vector<float>{3, 30}));
  EXPECT_EQ(restored.non_trainable_weights().size(), 3u);
}

TEST_F(PreprocessingSavingTest, TextVectorizationToEmbedding) {
  TextVectorization vectorize({.max_tokens = 20, .output_sequence_length = 5});
  vectorize.adapt(Tensor::from_strings({"the quick brown fox", "the lazy dog", "a quick dog"}));
  auto inputs = Input({1}, kString);
  auto x = Flatten()(Embedding(20, 4)(vectorize(inputs)));
  Model model(inputs, Dense(3)(x));
  auto loaded = round_trip(model, strings(Shape{2, 1}, {"The DOG, quick!", "an unknown fox"}));
  EXPECT_EQ(find_layer<TextVectorization>(*loaded).get_vocabulary(), vectorize.get_vocabulary());
}

TEST_F(PreprocessingSavingTest, TrainsOnStringInputs) {
  // y = 1 for "good" and -1 for "bad": the lookup feeds an embedding that fit() learns.
  StringLookup lookup({.vocabulary = {"good", "bad"}});
  auto inputs = Input({1}, kString);
  Model model(inputs, Dense(1)(Flatten()(Embedding(3, 2)(lookup(inputs)))));
  model.compile({.optimizer = optimizers::Adam(0.1), .loss = losses::MeanSquaredError()});
  std::vector<std::string> words;
  std::vector<float> targets;
  for (int i = 0; i < 32; ++i) {
    words.push_back(i % 2 ? "good" : "bad");
    targets.push_back(i % 2 ? 1.f : -1.f);
  }
  const Tensor x = strings(Shape{32, 1}, words);
  const Tensor y = from_values(targets, Shape{32, 1});
  const models::History history = model.fit(x, y, {.epochs = 30, .batch_size = 8, .verbose = 0});
  EXPECT_LT(history.history.at("loss").back(), 0.01);
  auto loaded = round_trip(model, x);
}

}  // namespace
}  // namespace chorus::layers
